-- :checkhealth vramlint
local M = {}

-- vim.health (0.8+, renamed in 0.10) or the health# functions of 0.7.
local health = vim.health or {}
local start = health.start or health.report_start or vim.fn["health#report_start"]
local ok = health.ok or health.report_ok or vim.fn["health#report_ok"]
local warn = health.warn or health.report_warn or vim.fn["health#report_warn"]
local err = health.error or health.report_error or vim.fn["health#report_error"]

function M.check()
  start("vramlint")
  local loaded, vramlint = pcall(require, "vramlint")
  if not loaded then
    err("require('vramlint') failed: " .. tostring(vramlint))
    return
  end
  local got, config = pcall(vramlint.default_config)
  if not got then
    err(tostring(config))
    return
  end
  ok("configuration: lsp/vramlint.lua, command `" .. table.concat(config.cmd, " ") .. "`")
  local binary = config.cmd[1]
  if vim.fn.executable(binary) ~= 1 then
    err("`" .. binary .. "` is not executable or not on PATH", { "pip install vramlint", "or pass setup({ cmd = { '/path/to/vramlint', 'server' } })" })
    return
  end
  local version = vim.fn.system({ binary, "version" })
  if vim.v.shell_error ~= 0 then
    err("`" .. binary .. " version` failed: " .. version)
    return
  end
  ok(vim.fn.exepath(binary) .. ": " .. vim.trim(version))
  local running = 0
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if client.name == "vramlint" then
      running = running + 1
    end
  end
  if running > 0 then
    ok(running .. " vramlint client(s) running")
  else
    warn("no vramlint client running: open a Python file")
  end
end

return M
