// Unit tests of binary resolution and of the settings-to-options mapping
// (node:test; `npm test`).
import assert from "node:assert/strict";
import { test } from "node:test";

import { atLeast, Environment, expandSetting, parseVersion, resolveServer } from "../src/resolve";
import { serverOptions } from "../src/settings";

function env(over: Partial<Environment>, executables: string[]): Environment {
  return {
    setting: "",
    extensionPath: "/ext",
    platform: "linux",
    pathVariable: "/usr/local/bin:/usr/bin",
    home: "/home/u",
    pythonInterpreter: async () => undefined,
    isExecutable: (f) => executables.includes(f),
    ...over,
  };
}

test("the setting wins over everything else", async () => {
  const r = await resolveServer(env({ setting: "/opt/vramlint" }, ["/opt/vramlint", "/ext/bin/vramlint", "/usr/bin/vramlint"]));
  assert.deepEqual(r.found, { path: "/opt/vramlint", source: "setting" });
});

test("a setting that names nothing is an error, without falling back", async () => {
  const r = await resolveServer(env({ setting: "/nope/vramlint" }, ["/ext/bin/vramlint"]));
  assert.equal(r.found, undefined);
  assert.match(r.error ?? "", /vramlint.path is set to "\/nope\/vramlint"/);
});

test("a bare name in the setting is looked up on PATH; ~ is the home folder", async () => {
  assert.deepEqual((await resolveServer(env({ setting: "vramlint-nightly" }, ["/usr/bin/vramlint-nightly"]))).found, {
    path: "/usr/bin/vramlint-nightly",
    source: "setting",
  });
  assert.equal(expandSetting("~/bin/vramlint", "/home/u"), "/home/u/bin/vramlint");
  assert.equal(expandSetting("tools/vramlint", "/home/u", "/ws"), "/ws/tools/vramlint");
});

test("then the bundled binary, then the Python environment, then PATH", async () => {
  const python = async () => "/venv/bin/python";
  const all = ["/ext/bin/vramlint", "/venv/bin/vramlint", "/usr/bin/vramlint"];
  assert.equal((await resolveServer(env({ pythonInterpreter: python }, all))).found?.source, "bundled");
  assert.deepEqual((await resolveServer(env({ pythonInterpreter: python }, all.slice(1)))).found, { path: "/venv/bin/vramlint", source: "python" });
  const r = await resolveServer(env({ pythonInterpreter: python }, all.slice(2)));
  assert.deepEqual(r.found, { path: "/usr/bin/vramlint", source: "path" });
  assert.deepEqual(r.tried, ["bundled: /ext/bin/vramlint", "Python environment: /venv/bin/vramlint", "PATH"]);
});

test("a failing Python extension does not stop the search", async () => {
  const r = await resolveServer(env({ pythonInterpreter: () => Promise.reject(new Error("no API")) }, ["/usr/bin/vramlint"]));
  assert.equal(r.found?.source, "path");
});

test("Windows: vramlint.exe, Scripts next to python.exe, ; in PATH", async () => {
  const w = { platform: "win32", extensionPath: "C:\\ext", pathVariable: "C:\\a;C:\\tools" };
  assert.equal((await resolveServer(env(w, ["C:\\ext\\bin\\vramlint.exe"]))).found?.path, "C:\\ext\\bin\\vramlint.exe");
  const py = { ...w, pythonInterpreter: async () => "C:\\venv\\Scripts\\python.exe" };
  assert.equal((await resolveServer(env(py, ["C:\\venv\\Scripts\\vramlint.exe"]))).found?.path, "C:\\venv\\Scripts\\vramlint.exe");
  assert.equal((await resolveServer(env(w, ["C:\\tools\\vramlint.exe"]))).found?.path, "C:\\tools\\vramlint.exe");
});

test("nothing found: every place tried is listed", async () => {
  const r = await resolveServer(env({}, []));
  assert.equal(r.found, undefined);
  assert.equal(r.error, undefined);
  assert.deepEqual(r.tried, ["bundled: /ext/bin/vramlint", "PATH"]);
});

test("versions", () => {
  assert.equal(parseVersion("vramlint 0.1.0-dev (go1.26.8, linux/amd64)\n"), "0.1.0");
  assert.equal(parseVersion("vramlint v1.2.3\n"), "1.2.3");
  assert.equal(parseVersion("flag provided but not defined: -version"), undefined);
  assert.ok(atLeast("0.1.0", "0.1.0"));
  assert.ok(atLeast("0.10.0", "0.9.9"));
  assert.ok(!atLeast("0.0.9", "0.1.0"));
  assert.ok(atLeast("1.0.0-rc1", "1.0.0"));
});

test("settings: unset ones are not sent, so pyproject.toml still applies", () => {
  assert.deepEqual(serverOptions({ select: null, ignore: null, extendSelect: null, severity: null, unsafeFixes: null, debounce: 100, logLevel: "info" }), {
    debounce: 100,
    logLevel: "info",
  });
});

test("settings: the server's keys and values", () => {
  assert.deepEqual(
    serverOptions({
      select: ["GPU001", " GPU00 ", ""],
      ignore: [],
      extendSelect: ["GPU005"],
      severity: { GPU002: "info" },
      unsafeFixes: false,
      debounce: 0,
      logLevel: "debug",
      diagnosticMode: "workspace",
    }),
    {
      select: ["GPU001", "GPU00"],
      ignore: [],
      extendSelect: ["GPU005"],
      severity: { GPU002: "info" },
      unsafeFixes: false,
      debounce: 0,
      logLevel: "debug",
      diagnosticMode: "workspace",
    },
  );
});

test("settings: a negative or non-numeric debounce is left out rather than sent and refused", () => {
  assert.deepEqual(serverOptions({ debounce: -5 }), {});
  assert.deepEqual(serverOptions({ debounce: Number.NaN }), {});
});
