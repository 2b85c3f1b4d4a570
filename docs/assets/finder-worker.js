/* The finder's calculator in the reader's browser: Pyodide (assets/pyodide/, the site's own
 * copy of the pinned npm package) runs the guide's vram package, whose sources come
 * unchanged in assets/vram.zip. A message {id, job, model} or {id, job, configText}
 * is answered with {id, text}: vram.job.answer_json of the job with that model's
 * config.json, the same JSON text as `python -m vram job ... --json` (or {"error": ...}).
 * No formula lives here.
 */
import { loadPyodide } from "./pyodide/pyodide.mjs";

const base = new URL("./", import.meta.url);

const ready = (async function () {
  const boot = {};  // milliseconds since the worker started, at the end of each phase
  const calculatorZip = fetch(new URL("vram.zip", base));  // fetched while Pyodide starts
  calculatorZip.catch(function () {});  // a failure is reported below, once awaited
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", base).href });
  boot.pyodide_ms = performance.now();
  const response = await calculatorZip;
  if (!response.ok) throw new Error(response.status + " " + response.statusText);
  pyodide.unpackArchive(await response.arrayBuffer(), "zip", { extractDir: "/home/pyodide/calculator" });
  boot.unpack_ms = performance.now();
  pyodide.runPython("import sys\nsys.path.insert(0, '/home/pyodide/calculator')\nimport vram.job");
  boot.import_ms = performance.now();
  self.postMessage({ boot: boot });
  const configs = {};
  pyodide.FS.readdir("/home/pyodide/calculator/configs").forEach(function (name) {
    if (name.endsWith(".json")) {
      configs[name.slice(0, -5)] = pyodide.FS.readFile("/home/pyodide/calculator/configs/" + name, { encoding: "utf8" });
    }
  });
  return { answer: pyodide.globals.get("vram").job.answer_json, configs: configs };
})();

self.onmessage = async function (event) {
  const message = event.data || {};
  try {
    const calculator = await ready;
    const job = Object.assign({}, message.job);
    job.config = typeof message.configText === "string" ? message.configText : calculator.configs[message.model];
    self.postMessage({ id: message.id, text: calculator.answer(JSON.stringify(job)) });
  } catch (error) {
    self.postMessage({ id: message.id, failure: String(error && error.message || error) });
  }
};
