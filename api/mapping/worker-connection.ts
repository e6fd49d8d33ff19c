/**
 * How a mapping worker finds the pool and says which worker it is (worker-launcher.ts listens,
 * mapping-worker.ts connects): the socket's address, the worker's id and its token come in the
 * worker's environment; the worker's first message is its hello.
 */
export const WORKER_SOCKET_ENV = 'INTAKE_MAPPING_SOCKET';

/**
 * The socket's address as the environment carries it: a name in Linux's abstract namespace
 * starts with a NUL byte, which no environment variable may hold, so it travels as "@name".
 */
export const addressForEnv = (address: string): string => (address.startsWith('\0') ? `@${address.slice(1)}` : address);
export const addressFromEnv = (value: string): string => (value.startsWith('@') ? `\0${value.slice(1)}` : value);
export const WORKER_ID_ENV = 'INTAKE_MAPPING_WORKER';
export const WORKER_TOKEN_ENV = 'INTAKE_MAPPING_TOKEN';

/** What a worker says first on its socket: its id, its token (hex) and its pid (the spawner's report of it may come later). */
export interface WorkerHello {
  id: number;
  token: string;
  pid: number;
}
