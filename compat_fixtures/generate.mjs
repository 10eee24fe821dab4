// Runs every generator in ./gen against the pinned TypeScript packages and writes one fixture
// file per suite into the output directory (default: ./fixtures).
//   node generate.mjs [OUT_DIR]
// Each gen/*.mjs module exports `async function generate(outDir, writeSuite)`.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = resolve(process.argv[2] ?? join(here, "fixtures"));
mkdirSync(outDir, { recursive: true });

/** Write one suite file in the shared schema (see README.md); keys sorted for stable diffs. */
function writeSuite(suite) {
  for (const key of ["suite", "package", "function", "cases"]) {
    if (!(key in suite)) throw new Error(`suite ${suite.suite ?? "?"} lacks '${key}'`);
  }
  const file = join(outDir, `${suite.suite}.json`);
  writeFileSync(file, JSON.stringify(suite, null, 1) + "\n");
  console.log(`${suite.suite}: ${suite.cases.length} cases -> ${file}`);
}

const genDir = join(here, "gen");
const only = process.env.FIXTURE_ONLY; // e.g. FIXTURE_ONLY=pi to run gen/pi.mjs alone
for (const name of readdirSync(genDir).filter((f) => /\.m?[jt]s$/.test(f)).sort()) {
  if (only && !name.startsWith(only)) continue;
  const mod = await import(pathToFileURL(join(genDir, name)).href);
  await mod.generate(outDir, writeSuite);
}
