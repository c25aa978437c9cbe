-- Headless test (run by cmd/vramlint/editor_test.go, after test/init.lua):
-- open data.py of a project whose DataLoader is in train.py, wait for
-- vramlint's diagnostics once the workspace is indexed (errors: train.py
-- runs the Dataset in 4 workers), apply the preferred quick fix, which
-- edits both files, save every buffer, and write what happened to
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

local function errors()
  return vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.ERROR })
end

if not vim.wait(15000, function() return #errors() > 0 end) then
  say("no errors: " .. codes())
  out:close()
  vim.cmd("qa!")
end
local d = errors()[1]
local related = d.user_data.lsp.relatedInformation or {}
local where = #related > 0 and vim.fn.fnamemodify(vim.uri_to_fname(related[1].location.uri), ":t") or "none"
say(("errors: %s (%s; related %s)"):format(codes(), d.message:match("%d+ DataLoader workers") or d.message, where))

local params = vim.lsp.util.make_range_params()
params.range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } }
params.context = { diagnostics = { d.user_data.lsp } }
local before = vim.b.changedtick
local results = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 5000)
local applied = false
for _, res in pairs(results or {}) do
  for _, action in ipairs(res.result or {}) do
    if not applied and action.kind == "quickfix" and action.isPreferred and action.edit then
      say("apply: " .. action.title)
      vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
      applied = true
    end
  end
end
if not applied then say("no action") end
vim.wait(10000, function() return vim.b.changedtick ~= before and #vim.diagnostic.get(buf) == 0 end)
say("remaining: " .. codes())
vim.cmd("wall")
say("done")
out:close()
vim.cmd("qa!")
