// Finding the vramlint binary, in one place and in a fixed order, with no
// dependency on the vscode API so that it can be unit-tested.
import * as path from "path";

/** The oldest server this extension works with (settings it sends,
 * diagnostics it expects). */
export const MIN_SERVER_VERSION = "0.1.0";

/** Where a binary was found. */
export type Source = "setting" | "bundled" | "python" | "path";

export interface Found {
  path: string;
  source: Source;
}

/** What resolution looks at; the extension passes the real ones. */
export interface Environment {
  /** The vramlint.path setting, "" when unset. */
  setting: string;
  /** The extension's folder: a platform package has bin/vramlint[.exe]. */
  extensionPath: string;
  /** process.platform. */
  platform: string;
  /** The PATH variable. */
  pathVariable: string;
  /** The user's home folder, for a setting that starts with ~. */
  home: string;
  /** The selected Python environment's interpreter, when the Python
   * extension is there and has one. */
  pythonInterpreter: () => Promise<string | undefined>;
  /** Whether a file exists and may be executed. */
  isExecutable: (file: string) => boolean;
}

function executableName(platform: string): string {
  return platform === "win32" ? "vramlint.exe" : "vramlint";
}

/** Expands ~ and makes a relative setting absolute against folder. */
export function expandSetting(setting: string, home: string, folder?: string): string {
  let p = setting.trim();
  if (p === "~" || p.startsWith("~/") || p.startsWith("~\\")) {
    p = path.join(home, p.slice(1));
  }
  if (folder && !path.isAbsolute(p) && (p.includes("/") || p.includes("\\"))) {
    p = path.join(folder, p);
  }
  return p;
}

/** Looks name up in a PATH-style list of folders. */
export function onPath(name: string, env: Pick<Environment, "pathVariable" | "platform" | "isExecutable">): string | undefined {
  const sep = env.platform === "win32" ? ";" : ":";
  const join = env.platform === "win32" ? path.win32.join : path.posix.join;
  for (const dir of env.pathVariable.split(sep)) {
    if (dir === "") {
      continue;
    }
    const candidate = join(dir, name);
    if (env.isExecutable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

/**
 * Finds the server, in this order: the vramlint.path setting (a path, or a
 * bare name looked up on PATH); the binary bundled in this extension for
 * this platform; vramlint in the selected Python environment's scripts
 * folder (next to its interpreter: bin/ or Scripts\); vramlint on PATH.
 *
 * A setting that names nothing executable is an error, not a reason to
 * fall back: the user asked for that binary. `tried` lists every place
 * looked at, for the notification.
 */
export async function resolveServer(env: Environment): Promise<{ found?: Found; tried: string[]; error?: string }> {
  const name = executableName(env.platform);
  const tried: string[] = [];
  if (env.setting.trim() !== "") {
    const p = expandSetting(env.setting, env.home);
    const hasSeparator = p.includes("/") || p.includes("\\");
    const found = hasSeparator ? (env.isExecutable(p) ? p : undefined) : onPath(p, env);
    tried.push(`vramlint.path: ${p}`);
    if (!found) {
      return { tried, error: `vramlint.path is set to "${env.setting}", which is not an executable file` };
    }
    return { found: { path: found, source: "setting" }, tried };
  }
  const join = env.platform === "win32" ? path.win32.join : path.posix.join;
  const bundled = join(env.extensionPath, "bin", name);
  tried.push(`bundled: ${bundled}`);
  if (env.isExecutable(bundled)) {
    return { found: { path: bundled, source: "bundled" }, tried };
  }
  const interpreter = await env.pythonInterpreter().catch(() => undefined);
  if (interpreter) {
    const dirname = env.platform === "win32" ? path.win32.dirname : path.posix.dirname;
    const scripts = join(dirname(interpreter), name);
    tried.push(`Python environment: ${scripts}`);
    if (env.isExecutable(scripts)) {
      return { found: { path: scripts, source: "python" }, tried };
    }
  }
  tried.push("PATH");
  const fromPath = onPath(name, env);
  if (fromPath) {
    return { found: { path: fromPath, source: "path" }, tried };
  }
  return { tried };
}

/** Reads the version out of `vramlint version` output
 * ("vramlint 0.1.0-dev (go1.26.8, linux/amd64)"). */
export function parseVersion(output: string): string | undefined {
  const m = /^vramlint v?(\d+\.\d+\.\d+)/m.exec(output);
  return m ? m[1] : undefined;
}

/** Whether version (x.y.z) is at least min; pre-release suffixes are
 * ignored, so 0.1.0-dev counts as 0.1.0. */
export function atLeast(version: string, min: string): boolean {
  const a = version.split(/[.-]/).slice(0, 3).map(Number);
  const b = min.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) {
      return (a[i] ?? 0) > (b[i] ?? 0);
    }
  }
  return true;
}
