// Copies the front-end assets into Django's static tree. There is no bundler on purpose: Chart.js and its
// error-bars plugin ship ready-made UMD builds, and each page's module is small enough to serve as written
// (see frontend/src/README.md).
// Plain Node, no dependencies: `node build.mjs` from any directory.
//
// Output, in campaigns/static/campaigns/build/ (wiped and rewritten on every run, ignored by git):
//   chart.umd.js, chart.umd.min.js and their .map files (the maps are copied so browser tools get no 404)
//   chartjs-chart-error-bars.umd.js and .umd.min.js (+ maps): the plugin's UMD build, which registers its
//   lineWithErrorBars chart type on the global Chart when loaded after chart.umd.min.js (the comparison page)
//   tom-select.complete.min.js and tom-select.min.css (+ maps): Tom Select's ready-made build (its plugins
//   included), which turns a <select multiple> into searchable chips (the comparison's "Change what is compared")
//   every frontend/src/*.js and frontend/src/*.css, under the same name
//   manifest.json: the Chart.js version and, per file, its size and sha256

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const frontendDir = dirname(fileURLToPath(import.meta.url));
const repoDir = dirname(frontendDir);
const srcDir = join(frontendDir, "src");
const chartDir = join(frontendDir, "node_modules", "chart.js");
const errorBarsDir = join(frontendDir, "node_modules", "chartjs-chart-error-bars");
const outDir = join(repoDir, "campaigns", "static", "campaigns", "build");

function fail(message) {
  console.error(`build.mjs: ${message}`);
  process.exit(1);
}

if (!existsSync(join(chartDir, "package.json"))) {
  fail(`${relative(repoDir, chartDir)} is missing: run \`npm ci\` in frontend/ first (scripts/setup.sh does).`);
}
const chartVersion = JSON.parse(readFileSync(join(chartDir, "package.json"), "utf8")).version;
if (!existsSync(join(errorBarsDir, "package.json"))) {
  fail(`${relative(repoDir, errorBarsDir)} is missing: run \`npm ci\` in frontend/ first (scripts/setup.sh does).`);
}
const errorBarsVersion = JSON.parse(readFileSync(join(errorBarsDir, "package.json"), "utf8")).version;
const tomSelectDir = join(frontendDir, "node_modules", "tom-select");
if (!existsSync(join(tomSelectDir, "package.json"))) {
  fail(`${relative(repoDir, tomSelectDir)} is missing: run \`npm ci\` in frontend/ first (scripts/setup.sh does).`);
}
const tomSelectVersion = JSON.parse(readFileSync(join(tomSelectDir, "package.json"), "utf8")).version;

// The UMD build is required; the minified build and the maps are copied when this Chart.js release has them.
const required = ["chart.umd.js"];
const optional = ["chart.umd.js.map", "chart.umd.min.js", "chart.umd.min.js.map"];
// Each source is [path, name in the build]; the plugin's files are renamed after it (they are index.umd.*).
const sources = [];
for (const name of required) {
  const path = join(chartDir, "dist", name);
  if (!existsSync(path)) fail(`${relative(repoDir, path)} is missing: is chart.js 4.x installed?`);
  sources.push([path, name]);
}
for (const name of optional) {
  const path = join(chartDir, "dist", name);
  if (existsSync(path)) sources.push([path, name]);
}
for (const suffix of ["umd.js", "umd.min.js", "umd.js.map", "umd.min.js.map"]) {
  const path = join(errorBarsDir, "build", `index.${suffix}`);
  if (!existsSync(path)) {
    if (suffix.endsWith(".map")) continue;
    fail(`${relative(repoDir, path)} is missing: is chartjs-chart-error-bars 4.x installed?`);
  }
  sources.push([path, `chartjs-chart-error-bars.${suffix}`]);
}
for (const name of ["js/tom-select.complete.min.js", "js/tom-select.complete.min.js.map", "css/tom-select.min.css",
  "css/tom-select.min.css.map"]) {
  const path = join(tomSelectDir, "dist", name);
  if (!existsSync(path)) {
    if (name.endsWith(".map")) continue;
    fail(`${relative(repoDir, path)} is missing: is tom-select 2.x installed?`);
  }
  sources.push([path, name.split("/")[1]]);
}
if (existsSync(srcDir)) {
  for (const name of readdirSync(srcDir).sort()) {
    const path = join(srcDir, name);
    if ((name.endsWith(".js") || name.endsWith(".css")) && statSync(path).isFile()) sources.push([path, name]);
  }
}

// Start from an empty directory so that a file removed from src/ does not linger in static.
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });

const files = {};
for (const [path, name] of sources) {
  if (name in files) fail(`two sources would both be written as ${name}`);
  let data = readFileSync(path);
  // The plugin's builds point at their maps by their own names (index.umd.min.js.map): point at the renamed ones.
  if (name.startsWith("chartjs-chart-error-bars.") && name.endsWith(".js")) {
    data = Buffer.from(data.toString("utf8").replace("sourceMappingURL=index.", "sourceMappingURL=chartjs-chart-error-bars."));
  }
  writeFileSync(join(outDir, name), data);
  files[name] = { bytes: data.length, sha256: createHash("sha256").update(data).digest("hex") };
}

const manifest = { chartjs_version: chartVersion, chartjs_chart_error_bars_version: errorBarsVersion,
  tom_select_version: tomSelectVersion, files };
writeFileSync(join(outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`frontend: ${Object.keys(files).length} files (chart.js ${chartVersion}, chartjs-chart-error-bars ${errorBarsVersion}, tom-select ${tomSelectVersion}) -> ${relative(repoDir, outDir)}/`);
