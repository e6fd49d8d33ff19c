/** An HTTP status code, coloured by its class (2xx, 4xx, 5xx). */
export function HttpStatus({ status }: { status: number }) {
  return <strong class={`http-status s${Math.floor(status / 100)}xx`}>{status}</strong>;
}
