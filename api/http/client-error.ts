import type { Duplex } from 'node:stream';
import { type ErrorFormatOf, renderError } from './error-format.ts';
import { HttpError } from './errors.ts';

/** What Node's HTTP parser reports when it refuses a request before any middleware runs. */
interface ParserError extends Error {
  code?: string;
  rawPacket?: Buffer;
}

/** Node's own choice of status per parser error (its default `clientError` answers). */
function parserErrorStatus(code: string | undefined): [number, string, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        'Request Header Fields Too Large',
        'The request line and headers are larger than the server accepts (16 KB)',
      ];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'Payload Too Large', 'The chunk extensions are larger than the server accepts'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'Request Timeout', 'The request was not received in time'];
    default:
      return [400, 'Bad Request', 'The request is not valid HTTP'];
  }
}

/**
 * The raw HTTP answer to a request Node's parser refused (a URL over the header limit, bad
 * syntax), in the error format of the path when the request line's start is in the packet,
 * else problem+json. Pure, for tests; `answerClientError` writes it.
 */
export function clientErrorResponse(error: ParserError, errorFormatOf: ErrorFormatOf = () => 'problem'): string {
  const [status, title, detail] = parserErrorStatus(error.code);
  const start = error.rawPacket?.toString('latin1', 0, 2048) ?? '';
  const path = /^[A-Z]+ (\/[^\s?#]*)/.exec(start)?.[1] ?? '/';
  const rendered = renderError(errorFormatOf(path), new HttpError(status, title, detail), path.slice(0, 200));
  const body = JSON.stringify(rendered.body);
  return [
    `HTTP/1.1 ${status} ${title}`,
    `Content-Type: ${rendered.contentType}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * For `server.on('clientError', answerClientError)`: without it Node answers these with a
 * bare status line and no body, in no service's format.
 */
export function answerClientError(
  error: ParserError,
  socket: Duplex,
  errorFormatOf: ErrorFormatOf = () => 'problem',
): void {
  // As Node's default: never write into a response that has already started on this socket.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  socket.end(clientErrorResponse(error, errorFormatOf));
}
