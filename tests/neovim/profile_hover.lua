-- Headless Neovim runs "Profile this step" through Stepscope's server, then asks for the hover and
-- the inlay hints of the loop's lines, writes what came back as JSON, and quits.
local out_path = os.getenv("STEPSCOPE_NVIM_OUT")
local server_cmd = vim.fn.json_decode(os.getenv("STEPSCOPE_SERVER_CMD"))
local step_line = tonumber(os.getenv("STEPSCOPE_STEP_LINE"))  -- 0-based line inside the loop
local hover_line = tonumber(os.getenv("STEPSCOPE_HOVER_LINE"))

local function write(result)
  local f = io.open(out_path, "w")
  f:write(vim.fn.json_encode(result))
  f:close()
end

vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    local buf = vim.api.nvim_get_current_buf()
    local client_id = vim.lsp.start_client({
      name = "stepscope", cmd = server_cmd, root_dir = vim.fn.getcwd(),
      init_options = { interpreter = os.getenv("STEPSCOPE_TORCH_PYTHON"),
                       profile = { wait = 0, warmup = 1, active = 2 } },
    })
    vim.lsp.buf_attach_client(buf, client_id)
    vim.defer_fn(function()
      local client = vim.lsp.get_client_by_id(client_id)
      local uri = vim.uri_from_bufnr(buf)
      local result = {}
      local profiled = client.request_sync("workspace/executeCommand", {
        command = "stepscope.profile",
        arguments = { { uri = uri, position = { line = step_line, character = 4 } } },
      }, 240000, buf)
      result.profile_error = profiled and profiled.err and profiled.err.message or vim.NIL
      result.summary = profiled and profiled.result and profiled.result.summary or vim.NIL
      local hover = client.request_sync("textDocument/hover", {
        textDocument = { uri = uri }, position = { line = hover_line, character = 6 },
      }, 10000, buf)
      result.hover = hover and hover.result and hover.result.contents.value or vim.NIL
      local hints = client.request_sync("textDocument/inlayHint", {
        textDocument = { uri = uri },
        range = { start = { line = 0, character = 0 }, ["end"] = { line = 500, character = 0 } },
      }, 10000, buf)
      result.hints = {}
      for _, hint in ipairs((hints and hints.result) or {}) do
        table.insert(result.hints, { line = hint.position.line, label = hint.label })
      end
      write(result)
      vim.cmd("qall!")
    end, 500)
  end,
})
