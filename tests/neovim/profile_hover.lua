-- Headless Neovim runs "Profile this step" from its code lens through Stepscope's server, then asks for the hover and
-- the inlay hints of the loop's lines; then edits the buffer (one line changed, two lines inserted
-- above the loop) and asks for the inlay hints again; writes what came back as JSON, and quits.
local out_path = os.getenv("STEPSCOPE_NVIM_OUT")
local server_cmd = vim.fn.json_decode(os.getenv("STEPSCOPE_SERVER_CMD"))
local hover_line = tonumber(os.getenv("STEPSCOPE_HOVER_LINE"))
local edit_line = tonumber(os.getenv("STEPSCOPE_EDIT_LINE"))  -- 0-based line whose code changes
local insert_at = tonumber(os.getenv("STEPSCOPE_INSERT_AT"))  -- 0-based line two lines go above

local function hints_of(client, uri, buf)
  local hints = client.request_sync("textDocument/inlayHint", {
    textDocument = { uri = uri },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = 500, character = 0 } },
  }, 10000, buf)
  local out = {}
  for _, hint in ipairs((hints and hints.result) or {}) do
    table.insert(out, { line = hint.position.line, label = hint.label })
  end
  return out
end

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
      -- "Profile this step" as its code lens runs it: the lens's own command and arguments, sent
      -- back to the server (what vim.lsp.codelens.run does for a command the server offers)
      local lenses = client.request_sync("textDocument/codeLens",
        { textDocument = { uri = uri } }, 10000, buf)
      local lens
      for _, l in ipairs((lenses and lenses.result) or {}) do
        if l.command and l.command.title == "Profile this step" then lens = l end
      end
      result.lens_command = lens and lens.command.command or vim.NIL
      local profiled = lens and client.request_sync("workspace/executeCommand", {
        command = lens.command.command, arguments = lens.command.arguments,
      }, 240000, buf)
      result.profile_error = profiled and profiled.err and profiled.err.message or vim.NIL
      result.summary = profiled and profiled.result and profiled.result.summary or vim.NIL
      local hover = client.request_sync("textDocument/hover", {
        textDocument = { uri = uri }, position = { line = hover_line, character = 6 },
      }, 10000, buf)
      result.hover = hover and hover.result and hover.result.contents.value or vim.NIL
      result.hints = hints_of(client, uri, buf)
      -- the user edits: one line's code changes, two lines go in above the loop
      local old = vim.api.nvim_buf_get_lines(buf, edit_line, edit_line + 1, false)[1]
      vim.api.nvim_buf_set_lines(buf, edit_line, edit_line + 1, false, { old .. "  # edited" })
      vim.api.nvim_buf_set_lines(buf, insert_at, insert_at, false, { "    # a note", "    # another" })
      vim.defer_fn(function()
        result.hints_after_edit = hints_of(client, uri, buf)
        write(result)
        vim.cmd("qall!")
      end, 1500)
    end, 500)
  end,
})
