// Starts real Pyodide once (the runtime xlwings Lite runs in), loads numpy and the xlwings wheel
// installed by install.sh, then hands the JSON request in one file to the harness's run() and
// prints its JSON answer on stdout. Python's own prints go to stderr.
//
//   node tests/lite_runtime/run.mjs .cache/lite-runtime tests/lite_runtime/harness.py request.json
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [runtime, harness, request] = process.argv.slice(2);
const indexURL = path.resolve(runtime, "node_modules", "pyodide") + path.sep;
const { loadPyodide } = await import(pathToFileURL(path.join(indexURL, "pyodide.mjs")).href);
const log = (line) => process.stderr.write(line + "\n");
const py = await loadPyodide({ indexURL, stdout: log, stderr: log });
await py.loadPackage("numpy", { messageCallback: () => {}, errorCallback: log });
const wheels = path.resolve(runtime, "wheels");
const site = py.runPython("import site; site.getsitepackages()[0]");
for (const name of fs.readdirSync(wheels).filter((n) => n.endsWith(".whl"))) {
  py.unpackArchive(new Uint8Array(fs.readFileSync(path.join(wheels, name))), "zip", { extractDir: site });
}
py.runPython(fs.readFileSync(harness, "utf8"));
process.stdout.write(await py.globals.get("run")(fs.readFileSync(request, "utf8")));
