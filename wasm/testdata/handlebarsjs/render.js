// Renders a batch of templates with handlebars.js, the reference
// implementation, for wasm's differential test (corpus_test.go).
//
// stdin:  [{"template": "...", "values": "<JSON text>"}, ...]
// stdout: [{"invalid": true, "message": "..."} |
//          {"error": "..."} | {"output": "..."}, ...]
//
// A template is invalid when Handlebars.precompile throws (parse and
// compile errors); an error is an exception thrown while rendering.
'use strict';

const Handlebars = require('handlebars');

// The log helper and prototype-access warnings go to the console: keep
// stdout for the results.
console.log = console.info = console.debug = console.error;

function run(c) {
  const env = Handlebars.create();
  try {
    env.precompile(c.template);
  } catch (e) {
    return { invalid: true, message: String(e.message) };
  }
  try {
    const values = JSON.parse(c.values);
    return { output: env.compile(c.template)(values) };
  } catch (e) {
    return { error: String(e.message) };
  }
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  process.stdout.write(JSON.stringify(JSON.parse(input).map(run)));
});
