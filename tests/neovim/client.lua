-- A headless Neovim session as a second LSP client: start Stepscope's server, attach it to the
-- opened file, wait for diagnostics and code lenses, write what arrived as JSON, and quit.
local out_path = os.getenv("STEPSCOPE_NVIM_OUT")
local server_cmd = vim.fn.json_decode(os.getenv("STEPSCOPE_SERVER_CMD"))
local buf, client_id

local function write(result)
  local f = io.open(out_path, "w")
  f:write(vim.fn.json_encode(result))
  f:close()
end

local deadline = vim.loop.now() + 20000
local function poll()
  local diags = vim.diagnostic.get(buf)
  if #diags == 0 and vim.loop.now() < deadline then
    vim.defer_fn(poll, 100)
    return
  end
  local client = vim.lsp.get_client_by_id(client_id)
  local lenses = client and client.request_sync("textDocument/codeLens",
    { textDocument = vim.lsp.util.make_text_document_params(buf) }, 5000, buf)
  local result = { diagnostics = {}, lenses = {} }
  for _, d in ipairs(diags) do
    table.insert(result.diagnostics, { line = d.lnum, col = d.col, code = d.code, message = d.message })
  end
  for _, lens in ipairs((lenses and lenses.result) or {}) do
    table.insert(result.lenses, { line = lens.range.start.line, title = lens.command and lens.command.title,
                                  command = lens.command and lens.command.command })
  end
  -- a lens whose command the server offers runs as workspace/executeCommand (vim.lsp.codelens.run)
  local provider = client and client.server_capabilities.executeCommandProvider
  result.server_commands = (provider and provider.commands) or {}
  write(result)
  vim.cmd("qall!")
end
-- The file's buffer is loaded only after this script runs: attach once Neovim has started.
vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    buf = vim.api.nvim_get_current_buf()
    client_id = vim.lsp.start_client({ name = "stepscope", cmd = server_cmd, root_dir = vim.fn.getcwd() })
    vim.lsp.buf_attach_client(buf, client_id)
    vim.defer_fn(poll, 100)
  end,
})
