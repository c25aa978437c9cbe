// The vramlint extension: starts `vramlint server` for Python files and
// keeps its settings in step with VS Code's.
import { execFile } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

import { atLeast, Found, MIN_SERVER_VERSION, parseVersion, resolveServer } from "./resolve";
import { SETTING_KEYS, serverOptions, Settings } from "./settings";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel;
let traceOutput: vscode.LogOutputChannel;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("vramlint", { log: true });
  traceOutput = vscode.window.createOutputChannel("vramlint Trace", { log: true });
  context.subscriptions.push(
    output,
    traceOutput,
    vscode.commands.registerCommand("vramlint.restart", () => restart(context)),
    vscode.commands.registerCommand("vramlint.showLogs", () => output.show(true)),
    vscode.commands.registerCommand("vramlint.fixAll", () =>
      vscode.commands.executeCommand("editor.action.codeAction", { kind: "source.fixAll.vramlint", apply: "first" }),
    ),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("vramlint.path")) {
        void restart(context);
      } else if (e.affectsConfiguration("vramlint") && client?.isRunning()) {
        void client.sendNotification(DidChangeConfigurationNotification.type, { settings: currentOptions() });
      }
    }),
  );
  await start(context);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

/** The settings of the first workspace folder (or the window's): the
 * server applies one set; per-project rules belong in pyproject.toml. */
function currentOptions(): Record<string, unknown> {
  const scope = vscode.workspace.workspaceFolders?.[0]?.uri;
  const config = vscode.workspace.getConfiguration("vramlint", scope);
  const s: Settings = {};
  for (const key of SETTING_KEYS) {
    (s as Record<string, unknown>)[key] = config.get(key, null);
  }
  return serverOptions(s);
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  const server = await findServer(context);
  if (!server) {
    return;
  }
  output.info(`Using ${server.path} (${server.source})`);
  const serverOptions: ServerOptions = {
    command: server.path,
    args: ["server"],
    // vscode-languageclient appends --stdio, which the server accepts.
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    initializationOptions: currentOptions(),
    outputChannel: output,
    traceOutputChannel: traceOutput,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
  };
  // The id "vramlint" makes the client read vramlint.trace.server.
  client = new LanguageClient("vramlint", "vramlint", serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err) {
    output.info(`The server did not start: ${err}`);
    void notify(`vramlint: the server at ${server.path} did not start (see Show Logs).`);
  }
}

async function restart(context: vscode.ExtensionContext): Promise<void> {
  const old = client;
  client = undefined;
  await old?.stop().catch(() => undefined);
  await start(context);
}

/** Resolves the binary and checks its version; tells the user once, with
 * a button to the setting, when there is none or it is too old. */
async function findServer(context: vscode.ExtensionContext): Promise<Found | undefined> {
  makeBundledExecutable(context.extensionPath);
  const setting = vscode.workspace.getConfiguration("vramlint").get<string>("path", "");
  const { found, tried, error } = await resolveServer({
    setting,
    extensionPath: context.extensionPath,
    platform: process.platform,
    pathVariable: process.env.PATH ?? "",
    home: os.homedir(),
    pythonInterpreter,
    isExecutable,
  });
  if (!found) {
    output.info(`No vramlint binary; looked at: ${tried.join("; ")}`);
    void notify(error ?? "vramlint: no `vramlint` binary found. Install it (pip install vramlint) or set vramlint.path.");
    return undefined;
  }
  const version = parseVersion(await run(found.path, ["version"]));
  if (!version || !atLeast(version, MIN_SERVER_VERSION)) {
    void notify(`vramlint: ${found.path} is version ${version ?? "unknown"}; this extension needs ${MIN_SERVER_VERSION} or later.`);
    return undefined;
  }
  return found;
}

async function notify(message: string): Promise<void> {
  const open = "Open Setting";
  if ((await vscode.window.showErrorMessage(message, open)) === open) {
    await vscode.commands.executeCommand("workbench.action.openSettings", "vramlint.path");
  }
}

/** An unpacked .vsix may have lost the bundled binary's executable bit. */
function makeBundledExecutable(extensionPath: string): void {
  const bundled = path.join(extensionPath, "bin", "vramlint");
  if (process.platform !== "win32" && fs.existsSync(bundled) && !isExecutable(bundled)) {
    try {
      fs.chmodSync(bundled, 0o755);
    } catch (err) {
      output.warn(`Could not make ${bundled} executable: ${err}`);
    }
  }
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000 }, (_err, stdout) => resolve(String(stdout)));
  });
}

/** The interpreter of the Python extension's selected environment. */
async function pythonInterpreter(): Promise<string | undefined> {
  const python = vscode.extensions.getExtension("ms-python.python");
  if (!python) {
    return undefined;
  }
  // The Python extension's API (environments.getActiveEnvironmentPath);
  // typed loosely to avoid a dependency for one call.
  const api = (python.isActive ? python.exports : await python.activate()) as {
    environments?: {
      getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
      resolveEnvironment(env: { path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    };
  };
  const envs = api?.environments;
  if (!envs) {
    return undefined;
  }
  const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
  const resolved = await envs.resolveEnvironment(active);
  return resolved?.executable.uri?.fsPath;
}
