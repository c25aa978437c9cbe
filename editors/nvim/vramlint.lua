-- vramlint for Neovim 0.7 and later, without plugins. Source it from
-- init.lua (`dofile("/path/to/vramlint.lua")`) or copy it there; the
-- `vramlint` binary must be on PATH.
local client_id
vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    client_id = client_id or vim.lsp.start_client({
      name = "vramlint",
      cmd = { "vramlint", "server" },
      root_dir = vim.fn.getcwd(),
    })
    vim.lsp.buf_attach_client(args.buf, client_id)
  end,
})
