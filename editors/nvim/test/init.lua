-- The tests' init.lua: the README's two lines, with this checkout's
-- editors/nvim folder.
local here = debug.getinfo(1, "S").source:sub(2)
vim.opt.runtimepath:append(vim.fn.fnamemodify(here, ":p:h:h"))
require("vramlint").setup()
