-- What the headless Neovim tests share (loaded with dofile by each test
-- script): the report file, the diagnostics as "CODE@line", and applying
-- a quick fix through Neovim's own LSP client.
local M = {}

-- start opens the report ($VRAMLINT_NVIM_OUT) and the file under test
-- ($VRAMLINT_NVIM_FILE), and returns the file's buffer.
function M.start()
  M.out = io.open(os.getenv("VRAMLINT_NVIM_OUT"), "w")
  vim.cmd("edit " .. os.getenv("VRAMLINT_NVIM_FILE"))
  return vim.api.nvim_get_current_buf()
end

function M.say(s) M.out:write(s .. "\n") end

-- finish closes the report and quits.
function M.finish()
  M.out:close()
  vim.cmd("qa!")
end

-- codes lists buf's diagnostics as "CODE@line", sorted.
function M.codes(buf)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(list, tostring(d.user_data and d.user_data.lsp and d.user_data.lsp.code or d.code) .. "@" .. (d.lnum + 1))
  end
  table.sort(list)
  return table.concat(list, " ")
end

-- apply_quick_fix asks for the code actions at diagnostic d and applies
-- the first quick fix with an edit that accept (optional) takes, saying
-- its title; it returns whether it applied one.
function M.apply_quick_fix(buf, d, accept)
  local params = vim.lsp.util.make_range_params()
  params.range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } }
  params.context = { diagnostics = { d.user_data.lsp } }
  local results = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 5000)
  for _, res in pairs(results or {}) do
    for _, action in ipairs(res.result or {}) do
      if action.kind == "quickfix" and action.edit and (accept == nil or accept(action)) then
        M.say("apply: " .. action.title)
        vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
        return true
      end
    end
  end
  return false
end

return M
