import test from 'ava';
import { startTestApi } from './helpers/app.ts';

const ctx = await startTestApi(null, { env: { RATE_LIMIT_ENABLED: 'false' } });
test.after.always(ctx.close);

test('the full /openapi.json (every service) is a valid OpenAPI 3.1 document', async (t) => {
  const { Validator } = await import('@seriousme/openapi-schema-validator');
  const document = (await (await ctx.fetch('/openapi.json')).json()) as { openapi: string };
  const result = await new Validator().validate(document);
  t.true(result.valid, JSON.stringify(result.errors));
});
