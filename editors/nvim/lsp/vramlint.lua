-- vramlint for Neovim 0.11's vim.lsp.config (and nvim-lspconfig's lsp/
-- folder): finds the PyTorch code that wastes or leaks GPU memory.
-- With this folder on 'runtimepath': vim.lsp.enable("vramlint").
-- For Neovim 0.7 to 0.10, require("vramlint").setup() reads this table.
return {
  cmd = { "vramlint", "server" },
  filetypes = { "python" },
  root_markers = { "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git" },
  -- Sent as initializationOptions and workspace/didChangeConfiguration;
  -- keys left out come from [tool.vramlint] in pyproject.toml. Keys:
  -- select, ignore, extendSelect, severity, unsafeFixes, debounce, logLevel,
  -- diagnosticMode.
  settings = { vramlint = {} },
}
