/** A JSON payload to edit before it is sent or mapped (the test event, the mapping playground). */
export function PayloadEditor({ id, value, onInput }: { id: string; value: string; onInput: (v: string) => void }) {
  return (
    <>
      <label for={id}>Payload (JSON)</label>
      <textarea
        id={id}
        class="code"
        rows={10}
        spellcheck={false}
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
    </>
  );
}
