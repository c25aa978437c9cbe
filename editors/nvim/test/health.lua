-- Headless test (run by cmd/vramlint/editor_test.go): the 0.11 config file
-- loads as a table with the right fields; :checkhealth vramlint reports the
-- binary and the running client; writes what it saw to $VRAMLINT_NVIM_OUT.
local out = io.open(os.getenv("VRAMLINT_NVIM_OUT"), "w")
local function say(s) out:write(s .. "\n") end

local config = dofile(vim.api.nvim_get_runtime_file("lsp/vramlint.lua", false)[1])
say(("config: cmd=%s filetypes=%s root_markers=%d settings=%s"):format(
  table.concat(config.cmd, " "), table.concat(config.filetypes, ","), #config.root_markers, type(config.settings.vramlint)))

vim.cmd("edit " .. os.getenv("VRAMLINT_NVIM_FILE"))
local buf = vim.api.nvim_get_current_buf()
vim.wait(10000, function() return #vim.lsp.buf_get_clients(buf) > 0 end)
vim.cmd("checkhealth vramlint")
for _, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
  say("health: " .. line)
end
say("done")
out:close()
vim.cmd("qa!")
