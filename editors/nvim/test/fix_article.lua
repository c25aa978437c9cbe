-- Headless test (run by cmd/vramlint/editor_test.go, after test/init.lua):
-- open a file, wait for vramlint's diagnostics, apply each preferred quick
-- fix through Neovim's own LSP client, and write what happened to
-- $VRAMLINT_NVIM_OUT.
local out = io.open(os.getenv("VRAMLINT_NVIM_OUT"), "w")
local function say(s) out:write(s .. "\n") end

vim.cmd("edit " .. os.getenv("VRAMLINT_NVIM_FILE"))
local buf = vim.api.nvim_get_current_buf()

local function codes()
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(list, tostring(d.user_data and d.user_data.lsp and d.user_data.lsp.code or d.code) .. "@" .. (d.lnum + 1))
  end
  table.sort(list)
  return table.concat(list, " ")
end

if not vim.wait(10000, function() return #vim.diagnostic.get(buf) > 0 end) then
  say("no diagnostics")
  vim.cmd("qa!")
end
say("diagnostics: " .. codes())

for _ = 1, 10 do
  local diags = vim.diagnostic.get(buf)
  if #diags == 0 then break end
  local d = diags[1]
  local params = vim.lsp.util.make_range_params()
  params.range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } }
  params.context = { diagnostics = { d.user_data.lsp } }
  local before = vim.b.changedtick
  local results = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 5000)
  local applied = false
  for _, res in pairs(results or {}) do
    for _, action in ipairs(res.result or {}) do
      if not applied and action.kind == "quickfix" and action.edit then
        say("apply: " .. action.title)
        vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
        applied = true
      end
    end
  end
  if not applied then say("no action for " .. tostring(d.code)); break end
  vim.wait(10000, function()
    local now = vim.diagnostic.get(buf)
    return vim.b.changedtick ~= before and (#now < #diags or #now == 0)
  end)
end
say("remaining: " .. codes())
vim.cmd("write")
say("done")
out:close()
vim.cmd("qa!")
