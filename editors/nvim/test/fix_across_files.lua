-- Headless test (run by cmd/vramlint/editor_test.go, after test/init.lua):
-- open data.py of a project whose DataLoader is in train.py, wait for
-- vramlint's diagnostics once the workspace is indexed (errors: train.py
-- runs the Dataset in 4 workers), apply the preferred quick fix, which
-- edits both files, save every buffer, and write what happened to
-- $VRAMLINT_NVIM_OUT.
local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/common.lua")
local buf = t.start()

local function errors()
  return vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.ERROR })
end

if not vim.wait(15000, function() return #errors() > 0 end) then
  t.say("no errors: " .. t.codes(buf))
  t.finish()
end
local d = errors()[1]
local related = d.user_data.lsp.relatedInformation or {}
local where = #related > 0 and vim.fn.fnamemodify(vim.uri_to_fname(related[1].location.uri), ":t") or "none"
t.say(("errors: %s (%s; related %s)"):format(t.codes(buf), d.message:match("%d+ DataLoader workers") or d.message, where))

local before = vim.b.changedtick
if not t.apply_quick_fix(buf, d, function(action) return action.isPreferred end) then
  t.say("no action")
end
vim.wait(10000, function() return vim.b.changedtick ~= before and #vim.diagnostic.get(buf) == 0 end)
t.say("remaining: " .. t.codes(buf))
vim.cmd("wall")
t.say("done")
t.finish()
