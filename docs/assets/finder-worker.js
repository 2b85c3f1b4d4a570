/* The finder's calculator in the reader's browser: Pyodide (assets/pyodide/, the site's own
 * copy of the pinned npm package) runs the guide's vram package, whose sources come
 * unchanged in assets/vram-bundle.json. A message {id, job, model} or {id, job, configText}
 * is answered with {id, text}: vram.job.answer_json of the job with that model's
 * config.json, the same JSON text as `python -m vram job ... --json` (or {"error": ...}).
 * No formula lives here.
 */
import { loadPyodide } from "./pyodide/pyodide.mjs";

const base = new URL("./", import.meta.url);

const ready = (async function () {
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", base).href });
  const response = await fetch(new URL("vram-bundle.json", base));
  if (!response.ok) throw new Error(response.status + " " + response.statusText);
  const bundle = await response.json();
  pyodide.FS.mkdirTree("/home/pyodide/calculator/vram");
  Object.keys(bundle.sources).forEach(function (path) {
    pyodide.FS.writeFile("/home/pyodide/calculator/" + path, bundle.sources[path]);
  });
  pyodide.runPython("import sys\nsys.path.insert(0, '/home/pyodide/calculator')\nimport vram.job");
  return { answer: pyodide.globals.get("vram").job.answer_json, configs: bundle.configs };
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
