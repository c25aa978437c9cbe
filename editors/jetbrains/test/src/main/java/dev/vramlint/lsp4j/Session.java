package dev.vramlint.lsp4j;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.eclipse.lsp4j.*;
import org.eclipse.lsp4j.jsonrpc.Launcher;
import org.eclipse.lsp4j.jsonrpc.messages.Either;
import org.eclipse.lsp4j.launch.LSPLauncher;
import org.eclipse.lsp4j.services.LanguageClient;
import org.eclipse.lsp4j.services.LanguageServer;

/**
 * One editing session as LSP4IJ (JetBrains IDEs) has it, through Eclipse
 * LSP4J with message validation on: the server is started with the
 * template's command, initialised with the capabilities LSP4IJ sends and
 * the template's initializationOptions; the article's program is opened,
 * its diagnostics checked, hovered, its GPU001 quick fix applied through
 * LSP4J's own edit types and compared with what `vramlint check --fix
 * --unsafe-fixes` writes; then fix-all is resolved lazily
 * (codeAction/resolve) on a second file and compared with `check --fix`.
 *
 * Arguments: the template folder, the repository root, a work folder. The
 * vramlint under test must be first on PATH.
 */
public final class Session {
  private static final long TIMEOUT_S = 30;

  public static void main(String[] args) throws Exception {
    Path template = Path.of(args[0]);
    Path repo = Path.of(args[1]);
    Path work = Files.createDirectories(Path.of(args[2]));
    JsonObject tpl = JsonParser.parseString(Files.readString(template.resolve("template.json"))).getAsJsonObject();
    String command = tpl.getAsJsonObject("programArgs").get("default").getAsString();
    JsonElement initOptions = JsonParser.parseString(Files.readString(template.resolve("initializationOptions.json")));

    Path article = work.resolve("train.py");
    Files.copy(repo.resolve("testdata/seed/dataloader_leak.py"), article, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    Path second = work.resolve("second.py");
    Files.copy(repo.resolve("examples/train.py"), second, java.nio.file.StandardCopyOption.REPLACE_EXISTING);

    Process proc = new ProcessBuilder(List.of(command.split(" "))).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    Client client = new Client();
    Launcher<LanguageServer> launcher = new LSPLauncher.Builder<LanguageServer>()
        .setLocalService(client)
        .setRemoteInterface(LanguageServer.class)
        .setInput(proc.getInputStream())
        .setOutput(proc.getOutputStream())
        .validateMessages(true)
        .create();
    launcher.startListening();
    LanguageServer server = launcher.getRemoteProxy();

    InitializeParams init = new InitializeParams();
    init.setProcessId((int) ProcessHandle.current().pid());
    init.setRootUri(work.toUri().toString());
    init.setWorkspaceFolders(List.of(new WorkspaceFolder(work.toUri().toString(), "work")));
    init.setCapabilities(lsp4ijCapabilities());
    init.setInitializationOptions(initOptions);
    InitializeResult result = server.initialize(init).get(TIMEOUT_S, TimeUnit.SECONDS);
    check(result.getCapabilities().getCodeActionProvider() != null, "no code action provider");
    server.initialized(new InitializedParams());

    // Diagnostics of the article's program.
    String uri = article.toUri().toString();
    String text = Files.readString(article);
    server.getTextDocumentService().didOpen(new DidOpenTextDocumentParams(new TextDocumentItem(uri, "python", 1, text)));
    List<Diagnostic> diags = client.diagnostics(uri, 1);
    List<String> seen = new ArrayList<>();
    for (Diagnostic d : diags) {
      seen.add(d.getCode().getLeft() + "@" + (d.getRange().getStart().getLine() + 1));
      String message = d.getMessage().getLeft();
      check(message.codePointCount(0, message.length()) <= 100, "message longer than 100 code points: " + message);
    }
    check(seen.equals(List.of("GPU001@42", "GPU001@43", "GPU005@87")), "diagnostics: " + seen);
    Diagnostic gpu001 = diags.get(0);
    check(gpu001.getSeverity() == DiagnosticSeverity.Error, "GPU001 severity " + gpu001.getSeverity());
    check(gpu001.getRelatedInformation() != null && gpu001.getRelatedInformation().size() == 1, "GPU001 related information");

    // The workspace folder is indexed in the background, with progress
    // (LSP4IJ shows it), and the diagnostics above did not wait for it.
    String indexed = client.indexed.get(TIMEOUT_S, TimeUnit.SECONDS);
    check(indexed.endsWith(" files") && !indexed.contains("cancelled"), "indexing progress ended with: " + indexed);

    // Hover.
    Hover hover = server.getTextDocumentService()
        .hover(new HoverParams(new TextDocumentIdentifier(uri), gpu001.getRange().getStart()))
        .get(TIMEOUT_S, TimeUnit.SECONDS);
    String hoverText = hover.getContents().getRight().getValue();
    check(hoverText.startsWith("**GPU001** `device-move-in-dataset` · error"), "hover: " + hoverText);

    // The GPU001 quick fix, preferred, applied through LSP4J's edit types.
    CodeActionContext ctx = new CodeActionContext(List.of(gpu001));
    List<Either<Command, CodeAction>> actions = server.getTextDocumentService()
        .codeAction(new CodeActionParams(new TextDocumentIdentifier(uri), gpu001.getRange(), ctx))
        .get(TIMEOUT_S, TimeUnit.SECONDS);
    CodeAction fix = null;
    for (Either<Command, CodeAction> a : actions) {
      if (a.isRight() && a.getRight().getTitle().contains("Move the device transfer into the training loop")) {
        fix = a.getRight();
      }
    }
    check(fix != null && Boolean.TRUE.equals(fix.getIsPreferred()) && fix.getEdit() != null, "GPU001 quick fix: " + actions);
    String fixed = apply(text, fix.getEdit(), uri, 1);
    String want = checkFix(text, work, "--fix", "--unsafe-fixes", "--select", "GPU001");
    check(!want.equals(text), "the GPU001 fix changes nothing: the test would prove nothing");
    check(fixed.equals(want), "after the GPU001 quick fix:\n" + fixed + "\nwant:\n" + want);
    server.getTextDocumentService().didChange(new DidChangeTextDocumentParams(
        new VersionedTextDocumentIdentifier(uri, 2), List.of(new TextDocumentContentChangeEvent(fixed))));
    List<String> after = new ArrayList<>();
    for (Diagnostic d : client.diagnostics(uri, 2)) {
      after.add(d.getCode().getLeft());
    }
    check(after.equals(List.of("GPU005")), "after the fix: " + after);

    // Fix-all, listed without its edit and resolved (LSP4IJ resolves).
    String secondUri = second.toUri().toString();
    String secondText = Files.readString(second);
    server.getTextDocumentService().didOpen(new DidOpenTextDocumentParams(new TextDocumentItem(secondUri, "python", 1, secondText)));
    client.diagnostics(secondUri, 1);
    CodeActionContext fixAllCtx = new CodeActionContext(List.of());
    fixAllCtx.setOnly(List.of(CodeActionKind.SourceFixAll));
    List<Either<Command, CodeAction>> fixAll = server.getTextDocumentService()
        .codeAction(new CodeActionParams(new TextDocumentIdentifier(secondUri), new Range(new Position(0, 0), new Position(0, 0)), fixAllCtx))
        .get(TIMEOUT_S, TimeUnit.SECONDS);
    check(fixAll.size() == 1 && fixAll.get(0).isRight(), "fix-all: " + fixAll);
    CodeAction resolved = fixAll.get(0).getRight();
    if (resolved.getEdit() == null) {
      resolved = server.getTextDocumentService().resolveCodeAction(resolved).get(TIMEOUT_S, TimeUnit.SECONDS);
    }
    String secondFixed = apply(secondText, resolved.getEdit(), secondUri, 1);
    String secondWant = checkFix(secondText, work, "--fix");
    check(!secondWant.equals(secondText), "second.py has no safe fix: the test would prove nothing");
    check(secondFixed.equals(secondWant), "after fix-all:\n" + secondFixed + "\nwant:\n" + secondWant);

    server.shutdown().get(TIMEOUT_S, TimeUnit.SECONDS);
    server.exit();
    check(proc.waitFor(TIMEOUT_S, TimeUnit.SECONDS) && proc.exitValue() == 0, "the server did not exit with 0");
    System.out.println("LSP4J (JetBrains LSP4IJ) session: diagnostics, indexing progress, hover, quick fix, resolved fix-all: ok");
    System.exit(0);
  }

  /** The client capabilities LSP4IJ announces, as far as they matter here. */
  static ClientCapabilities lsp4ijCapabilities() {
    TextDocumentClientCapabilities td = new TextDocumentClientCapabilities();
    SynchronizationCapabilities sync = new SynchronizationCapabilities(true, true, true);
    td.setSynchronization(sync);
    PublishDiagnosticsCapabilities publish = new PublishDiagnosticsCapabilities(true);
    publish.setCodeDescriptionSupport(true);
    publish.setDataSupport(true);
    td.setPublishDiagnostics(publish);
    td.setHover(new HoverCapabilities(List.of(MarkupKind.MARKDOWN, MarkupKind.PLAINTEXT), true));
    CodeActionCapabilities codeAction = new CodeActionCapabilities(
        new CodeActionLiteralSupportCapabilities(new CodeActionKindCapabilities(List.of(
            CodeActionKind.Empty, CodeActionKind.QuickFix, CodeActionKind.Refactor, CodeActionKind.Source,
            CodeActionKind.SourceOrganizeImports, CodeActionKind.SourceFixAll))),
        true);
    codeAction.setIsPreferredSupport(true);
    codeAction.setDataSupport(true);
    codeAction.setResolveSupport(new CodeActionResolveSupportCapabilities(List.of("edit")));
    td.setCodeAction(codeAction);
    WorkspaceClientCapabilities ws = new WorkspaceClientCapabilities();
    ws.setApplyEdit(true);
    WorkspaceEditCapabilities edit = new WorkspaceEditCapabilities();
    edit.setDocumentChanges(true);
    ws.setWorkspaceEdit(edit);
    ws.setConfiguration(true);
    ws.setWorkspaceFolders(true);
    ws.setDidChangeConfiguration(new DidChangeConfigurationCapabilities(true));
    ClientCapabilities caps = new ClientCapabilities(ws, td, null);
    WindowClientCapabilities window = new WindowClientCapabilities();
    window.setWorkDoneProgress(true);
    caps.setWindow(window);
    return caps;
  }

  /** Applies a workspace edit's changes to one document, given as text. */
  static String apply(String text, WorkspaceEdit edit, String uri, int version) {
    List<TextEdit> edits = new ArrayList<>();
    if (edit.getDocumentChanges() != null) {
      for (Either<TextDocumentEdit, ResourceOperation> change : edit.getDocumentChanges()) {
        TextDocumentEdit tde = change.getLeft();
        check(tde != null && tde.getTextDocument().getUri().equals(uri), "edit of another document: " + change);
        check(tde.getTextDocument().getVersion() == version, "edit for version " + tde.getTextDocument().getVersion());
        for (Either<TextEdit, SnippetTextEdit> e : tde.getEdits()) {
          edits.add(e.getLeft());
        }
      }
    } else {
      edits.addAll(edit.getChanges().get(uri));
    }
    check(!edits.isEmpty(), "an empty edit");
    // From the end, so earlier offsets stay valid; Java strings are UTF-16,
    // the protocol's default position encoding.
    edits.sort(Comparator.comparing((TextEdit e) -> offset(text, e.getRange().getStart())).reversed());
    StringBuilder out = new StringBuilder(text);
    for (TextEdit e : edits) {
      out.replace(offset(text, e.getRange().getStart()), offset(text, e.getRange().getEnd()), e.getNewText());
    }
    return out.toString();
  }

  static int offset(String text, Position p) {
    int off = 0;
    for (int line = 0; line < p.getLine(); line++) {
      off = text.indexOf('\n', off) + 1;
      check(off > 0, "position past the end: " + p);
    }
    return off + p.getCharacter();
  }

  /** What `vramlint check ARGS` writes for text, on a copy. */
  static String checkFix(String text, Path work, String... args) throws IOException, InterruptedException {
    Path copy = Files.createTempFile(work, "check-", ".py");
    Files.writeString(copy, text);
    List<String> cmd = new ArrayList<>(List.of("vramlint", "check"));
    cmd.addAll(List.of(args));
    cmd.add(copy.toString());
    new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.INHERIT).start().waitFor();
    return Files.readString(copy, StandardCharsets.UTF_8);
  }

  static void check(boolean ok, String message) {
    if (!ok) {
      throw new AssertionError(message);
    }
  }

  /** Collects published diagnostics by document and version. */
  static final class Client implements LanguageClient {
    private final Map<String, CompletableFuture<List<Diagnostic>>> published = new ConcurrentHashMap<>();

    private CompletableFuture<List<Diagnostic>> slot(String uri, int version) {
      return published.computeIfAbsent(uri + "@" + version, k -> new CompletableFuture<>());
    }

    List<Diagnostic> diagnostics(String uri, int version) throws Exception {
      return slot(uri, version).get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    @Override
    public void publishDiagnostics(PublishDiagnosticsParams p) {
      if (p.getVersion() != null) {
        slot(p.getUri(), p.getVersion()).complete(p.getDiagnostics());
      }
    }

    @Override
    public void telemetryEvent(Object object) {}

    @Override
    public void showMessage(MessageParams p) {
      System.err.println("showMessage: " + p.getMessage());
    }

    @Override
    public CompletableFuture<MessageActionItem> showMessageRequest(ShowMessageRequestParams p) {
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public void logMessage(MessageParams p) {
      System.err.println("logMessage: " + p.getMessage());
    }

    /** The end message of the workspace indexing's progress. */
    final CompletableFuture<String> indexed = new CompletableFuture<>();

    @Override
    public CompletableFuture<Void> createProgress(WorkDoneProgressCreateParams p) {
      return CompletableFuture.completedFuture(null);
    }

    @Override
    public void notifyProgress(ProgressParams p) {
      if (p.getValue().isLeft() && p.getValue().getLeft() instanceof WorkDoneProgressEnd end) {
        indexed.complete(end.getMessage() == null ? "" : end.getMessage());
      }
    }

    @Override
    public CompletableFuture<List<Object>> configuration(ConfigurationParams p) {
      List<Object> out = new ArrayList<>();
      p.getItems().forEach(i -> out.add(new JsonObject()));
      return CompletableFuture.completedFuture(out);
    }
  }
}
