/**
 * A result that carries its own status, headers and body, for an operation that answers another
 * resource than its own now and then: an import that runs as a job answers `202 Accepted` with
 * the Job (api/tracking/activity-files.ts) where it otherwise answers `201` with the Activity.
 * api/http/operation.ts writes it as is; the operation documents it in its `responses`.
 */
export class Answer {
  readonly status: number;
  readonly body: unknown;
  readonly contentType: string;
  readonly headers: Record<string, string>;

  constructor(status: number, body: unknown, contentType: string, headers: Record<string, string> = {}) {
    this.status = status;
    this.body = body;
    this.contentType = contentType;
    this.headers = headers;
  }
}
