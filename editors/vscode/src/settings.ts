// The extension's settings, as the server reads them (initializationOptions
// and workspace/didChangeConfiguration). No vscode dependency: unit-tested.

/** The vramlint.* settings the server uses; null means "not set here". */
export interface Settings {
  select?: string[] | null;
  ignore?: string[] | null;
  extendSelect?: string[] | null;
  severity?: Record<string, string> | null;
  unsafeFixes?: boolean | null;
  debounce?: number | null;
  logLevel?: string | null;
  diagnosticMode?: string | null;
}

/** The keys read from the configuration, in the order above. */
export const SETTING_KEYS: (keyof Settings)[] = ["select", "ignore", "extendSelect", "severity", "unsafeFixes", "debounce", "logLevel", "diagnosticMode"];

/**
 * The server's options for these settings. A setting left at null is not
 * sent, so `[tool.vramlint]` in pyproject.toml still applies: what the
 * editor sends overrides the project's configuration key by key. Extension
 * settings the server does not read (path, trace) are never sent.
 */
export function serverOptions(s: Settings): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) {
    const v = s[key];
    if (v === null || v === undefined) {
      continue;
    }
    if (key === "debounce" && (typeof v !== "number" || !(v >= 0))) {
      continue; // the server would refuse the whole set
    }
    out[key] = Array.isArray(v) ? v.map((x) => String(x).trim()).filter((x) => x !== "") : v;
  }
  return out;
}
