// Generates `schema.ts` (the types of every operation) from a running API's /openapi.json:
//   node generate.ts http://localhost:3000/openapi.json schema.ts
// Binary bodies (GPX, TCX, FIT files, pictures) become `Blob`, so a file is sent as its bytes.
import { writeFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';

const [source = 'http://localhost:3000/openapi.json', target = 'schema.ts'] = process.argv.slice(2);
const ast = await openapiTS(new URL(source), {
  transform: (schema) =>
    'format' in schema && schema.format === 'binary' ? ts.factory.createTypeReferenceNode('Blob') : undefined,
});
writeFileSync(target, astToString(ast));
