-- Headless test (run by cmd/vramlint/editor_test.go, after test/init.lua):
-- open a file, wait for vramlint's diagnostics, apply each preferred quick
-- fix through Neovim's own LSP client, and write what happened to
-- $VRAMLINT_NVIM_OUT.
local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/common.lua")
local buf = t.start()

if not vim.wait(10000, function() return #vim.diagnostic.get(buf) > 0 end) then
  t.say("no diagnostics")
  t.finish()
end
t.say("diagnostics: " .. t.codes(buf))

for _ = 1, 10 do
  local diags = vim.diagnostic.get(buf)
  if #diags == 0 then break end
  local d = diags[1]
  local before = vim.b.changedtick
  if not t.apply_quick_fix(buf, d) then
    t.say("no action for " .. tostring(d.code))
    break
  end
  vim.wait(10000, function()
    local now = vim.diagnostic.get(buf)
    return vim.b.changedtick ~= before and (#now < #diags or #now == 0)
  end)
end
t.say("remaining: " .. t.codes(buf))
vim.cmd("write")
t.say("done")
t.finish()
