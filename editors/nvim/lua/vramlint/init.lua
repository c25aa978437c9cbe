-- vramlint for Neovim 0.7 and later, without other plugins:
--
--   vim.opt.runtimepath:append("/path/to/vramlint/editors/nvim")
--   require("vramlint").setup()
--
-- setup() takes the fields of lsp/vramlint.lua to override (cmd,
-- filetypes, root_markers, settings). On Neovim 0.11 and later it uses
-- vim.lsp.config/enable; before, it starts one client per project root.
local M = {}

local warned = false

-- The default configuration: lsp/vramlint.lua, the file Neovim 0.11 reads.
function M.default_config()
  local file = vim.api.nvim_get_runtime_file("lsp/vramlint.lua", false)[1]
  if not file then
    error("vramlint: lsp/vramlint.lua is not on 'runtimepath'; add the editors/nvim folder to it")
  end
  return dofile(file)
end

local function merged(opts)
  return vim.tbl_deep_extend("force", M.default_config(), opts or {})
end

-- Whether the server's binary can be started; says so once if not,
-- instead of failing with a Lua traceback on every Python buffer.
function M.executable(config)
  if vim.fn.executable(config.cmd[1]) == 1 then
    return true
  end
  if not warned then
    warned = true
    vim.notify(
      ("vramlint: `%s` was not found; install it (pip install vramlint) or pass setup({ cmd = { '/path/to/vramlint', 'server' } })"):format(config.cmd[1]),
      vim.log.levels.ERROR
    )
  end
  return false
end

local function find_root(buf, markers)
  local name = vim.api.nvim_buf_get_name(buf)
  local dir = name ~= "" and vim.fn.fnamemodify(name, ":p:h") or vim.fn.getcwd()
  while true do
    for _, marker in ipairs(markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return name ~= "" and vim.fn.fnamemodify(name, ":p:h") or vim.fn.getcwd()
    end
    dir = parent
  end
end

local clients = {} -- root folder -> client id

function M.setup(opts)
  local config = merged(opts)
  if vim.lsp.config and vim.lsp.enable then
    if M.executable(config) then
      vim.lsp.config("vramlint", config)
      vim.lsp.enable("vramlint")
    end
    return
  end
  local group = vim.api.nvim_create_augroup("vramlint", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = config.filetypes,
    callback = function(args)
      if vim.bo[args.buf].buftype ~= "" or not M.executable(config) then
        return
      end
      local root = find_root(args.buf, config.root_markers)
      local id = clients[root]
      if not id or not vim.lsp.get_client_by_id(id) then
        id = vim.lsp.start_client({
          name = "vramlint",
          cmd = config.cmd,
          root_dir = root,
          workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
          init_options = config.settings.vramlint,
          settings = config.settings,
        })
        clients[root] = id
      end
      if id then
        vim.lsp.buf_attach_client(args.buf, id)
      end
    end,
  })
end

return M
