import type { AppContext } from '../context.ts';
import type { ApiRouter } from '../http/route.ts';

// TODO(issue 10): being built.
export function usersResource(_router: ApiRouter, _app: AppContext): void {}
