/**
 * Who was refused: requests that proved their credentials (what they claimed, kept in full), and
 * senders that did not (anyone can send those, so only the address and a count are kept).
 * Everything a sender wrote is shown inert (common/sender-text.ts).
 */
import { inertText } from '../../../common/sender-text.js';
import { age } from '../data/model.js';
import type { Refusal, UnauthenticatedSender } from '../data/resources.js';

export function RecentRefusals({ refusals, now }: { refusals: Refusal[]; now: number }) {
  if (refusals.length === 0) return <p class="muted">None.</p>;
  return (
    <table class="refusals">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Status</th>
          <th scope="col">Reason</th>
          <th scope="col">Message</th>
          <th scope="col">Sender</th>
          <th scope="col">User-Agent (as sent)</th>
          <th scope="col">Dead letter</th>
        </tr>
      </thead>
      <tbody>
        {refusals.map((f, i) => (
          <tr key={`${f.time}-${i}`}>
            <td title={f.time}>{age(f.time, now)}</td>
            <td>{f.status}</td>
            <td class="reason">{inertText(f.reason)}</td>
            <td class="message">
              {f.code ? `${inertText(f.code)}: ` : ''}
              {inertText(f.message)}
            </td>
            <td class="sender">{inertText(f.remoteAddress)}</td>
            <td class="user-agent">{f.userAgent ? `“${inertText(f.userAgent)}”` : ''}</td>
            <td>{f.deadLetterId ? <code>{inertText(f.deadLetterId)}</code> : ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function UnauthenticatedSenders({ senders, now }: { senders: UnauthenticatedSender[]; now: number }) {
  if (senders.length === 0) return null;
  return (
    <>
      <h3>Refused before authentication</h3>
      <p class="muted">
        Senders that proved no credentials (a wrong password or signature, a blocked address). Anyone can send these, so
        only the address and a count are kept.
      </p>
      <table class="unauthenticated">
        <thead>
          <tr>
            <th scope="col">Last</th>
            <th scope="col">Status</th>
            <th scope="col">Reason</th>
            <th scope="col">Address</th>
            <th scope="col">Count</th>
            <th scope="col">Since</th>
          </tr>
        </thead>
        <tbody>
          {senders.map((s, i) => (
            <tr key={`${s.remoteAddress}-${s.reason}-${i}`}>
              <td title={s.lastTime}>{age(s.lastTime, now)}</td>
              <td>{s.status}</td>
              <td class="reason">{inertText(s.reason)}</td>
              <td class="sender">{inertText(s.remoteAddress)}</td>
              <td>{s.count}</td>
              <td title={s.firstTime}>{age(s.firstTime, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
