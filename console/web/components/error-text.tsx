/** A failure the page reports (the server's message as it is), read out by screen readers; nothing when there is none. */
export function ErrorText({ message, class: extra }: { message: string | undefined; class?: string }) {
  if (!message) return null;
  return (
    <p class={extra ? `error ${extra}` : 'error'} role="alert">
      {message}
    </p>
  );
}

/** A notice after an action succeeded; nothing when there is none. */
export function Notice({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="notice" role="status">
      {message}
    </p>
  );
}
