-- Headless test: with no vramlint on PATH, opening Python files gives one
-- clear message and no Lua error; writes what it saw to $VRAMLINT_NVIM_OUT.
local out = io.open(os.getenv("VRAMLINT_NVIM_OUT"), "w")
local function say(s) out:write(s .. "\n") end
vim.notify = function(msg, level)
  say(("notify(%s): %s"):format(tostring(level), msg))
end
local ok, err = pcall(function()
  vim.cmd("edit " .. os.getenv("VRAMLINT_NVIM_FILE"))
  vim.cmd("new second.py")
  vim.cmd("setfiletype python")
end)
say("errors: " .. (ok and "none" or tostring(err)))
say("clients: " .. #vim.lsp.get_active_clients())
say("done")
out:close()
vim.cmd("qa!")
