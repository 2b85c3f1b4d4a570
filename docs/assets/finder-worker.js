/* The finder's calculator in the reader's browser: Pyodide (assets/pyodide/, the site's own
 * copy of the pinned npm package, with the part of its standard library this worker imports,
 * assets/pyodide-stdlib.zip.zst, and its lock file without packages) runs the guide's vram
 * package, assets/vram.zip.zst, imported from the archive as it is. Both archives hold their
 * modules compiled (<name>.pyc, by the pinned package's own CPython: verify/precompile.py),
 * so that starting compiles no Python source. A message {id, job, model} or {id, job, configText} is answered with {id, text}:
 * vram.job.answer_json of the job with that model's config.json (read from the archive), the
 * same JSON text as `python -m vram job ... --json` (or {"error": ...}). No formula lives here.
 * The .zst files are Zstandard-packed (GitHub Pages would send them gzip-compressed at best,
 * or not compressed at all), unpacked here with fzstd (assets/fzstd/, the pinned npm package)
 * into the bytes they were packed from. (hooks/finder/pyodide_assets.py says what each file is.)
 */
import { loadPyodide } from "./pyodide/pyodide.mjs";
import { decompress } from "./fzstd/index.mjs";

const base = new URL("./", import.meta.url);
const ARCHIVE = "/home/pyodide/vram.zip";
// What Pyodide fetches itself, by URL, and its type: the worker's fetch answers these two from
// their packed files while Pyodide starts (WebAssembly.instantiateStreaming needs the type).
const PACKED_FOR_PYODIDE = {
  [new URL("pyodide/pyodide.asm.wasm", base).href]: "application/wasm",
  [new URL("pyodide-stdlib.zip", base).href]: "application/zip"
};
const browserFetch = self.fetch;

async function unpacked(url) {
  const response = await browserFetch(url + ".zst");
  if (!response.ok) throw new Error(url + ".zst: " + response.status + " " + response.statusText);
  return decompress(new Uint8Array(await response.arrayBuffer()));
}

const ready = (async function () {
  const boot = {};  // milliseconds since the worker started, at the end of each phase
  const calculatorZip = unpacked(new URL("vram.zip", base).href);  // fetched while Pyodide starts
  calculatorZip.catch(function () {});  // a failure is reported below, once awaited
  self.fetch = function (resource, options) {
    const type = PACKED_FOR_PYODIDE[String(resource)];
    if (type === undefined) return browserFetch(resource, options);
    return unpacked(String(resource)).then(function (bytes) {
      return new Response(bytes, { headers: { "Content-Type": type } });
    });
  };
  let pyodide;
  try {
    pyodide = await loadPyodide({
      indexURL: new URL("pyodide/", base).href,
      stdLibURL: new URL("pyodide-stdlib.zip", base).href,
      lockFileURL: new URL("pyodide-lock.json", base).href
    });
  } finally {
    self.fetch = browserFetch;
  }
  boot.pyodide_ms = performance.now();
  pyodide.FS.writeFile(ARCHIVE, await calculatorZip);
  boot.archive_ms = performance.now();
  pyodide.runPython([
    "import sys, zipimport",
    "sys.path.insert(0, '" + ARCHIVE + "')",
    "import vram.job",
    "_calculator = zipimport.zipimporter('" + ARCHIVE + "')",
    "def model_config(key):",
    "    return _calculator.get_data('configs/' + key + '.json').decode()"
  ].join("\n"));
  boot.import_ms = performance.now();
  self.postMessage({ boot: boot });
  return { answer: pyodide.globals.get("vram").job.answer_json, config: pyodide.globals.get("model_config") };
})();

self.onmessage = async function (event) {
  const message = event.data || {};
  try {
    const calculator = await ready;
    const job = Object.assign({}, message.job);
    job.config = typeof message.configText === "string" ? message.configText : calculator.config(String(message.model));
    self.postMessage({ id: message.id, text: calculator.answer(JSON.stringify(job)) });
  } catch (error) {
    self.postMessage({ id: message.id, failure: String(error && error.message || error) });
  }
};
