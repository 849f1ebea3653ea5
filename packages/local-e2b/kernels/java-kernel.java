// sandkeep local-e2b: the Java kernel of one code-interpreter context.
//
// One process per context, started by the host inside the sandbox (`java java-kernel.java`, the machine's JDK),
// evaluating cells with JShell, the JDK's own read-eval-print engine, in this JVM (its local execution engine).
// It speaks the protocol of python-kernel.py (see its docstring): requests as JSON lines on stdin, messages as
// MARKER + JSON + "\n" on stdout. A cell is split into JShell snippets; the value of each expression snippet is
// shown as JShell shows it (a String without its quotes), the last as the cell's main result; a compile error
// or an exception ends the cell. As E2B's Java kernel, environment variables are system properties too: the
// sandbox's from the start, an execution's for that cell. An interrupt stops the running snippet.

import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.BufferedReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.stream.Collectors;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.VarSnippet;

public class JavaKernel {
  /** Most characters of one stdout/stderr message, as the other kernels (the host parses each message whole). */
  static final int MESSAGE_CHARS = 64 * 1024;

  static PrintStream wire;
  static String marker;
  static final Object sending = new Object();
  static volatile Integer runningId;

  public static void main(String[] args) throws Exception {
    wire = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Object hello = Json.parse(requests.readLine());
    marker = "\u001e" + ((Map<?, ?>) hello).get("nonce") + ":";
    // Cells print through System.out and System.err: framed as the running cell's output.
    System.setOut(new PrintStream(new CellOutput("stdout"), true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(new CellOutput("stderr"), true, StandardCharsets.UTF_8));
    for (Map.Entry<String, String> variable : System.getenv().entrySet()) {
      if (System.getProperty(variable.getKey()) == null) System.setProperty(variable.getKey(), variable.getValue());
    }
    JShell shell = JShell.builder().executionEngine("local").build();
    // The first evaluation loads the compiler; paid here, before the kernel says it is ready.
    shell.eval("0");
    LinkedBlockingQueue<Map<?, ?>> cells = new LinkedBlockingQueue<>();
    Thread reader = new Thread(() -> {
      try {
        String line;
        while ((line = requests.readLine()) != null) {
          Object message;
          try {
            message = Json.parse(line);
          } catch (RuntimeException error) {
            continue;
          }
          if (!(message instanceof Map<?, ?> request)) continue;
          if ("interrupt".equals(request.get("t"))) {
            Integer running = runningId;
            if (running != null && running.equals(number(request.get("id")))) shell.stop();
          } else cells.put(request);
        }
      } catch (Exception error) {
        // The host is gone either way.
      }
      // The host closed the requests: the context is gone.
      Runtime.getRuntime().halt(0);
    }, "sandkeep-requests");
    reader.setDaemon(true);
    reader.start();
    send(Map.of("t", "ready", "pid", ProcessHandle.current().pid(), "version", 1));
    int count = 0;
    while (true) {
      Map<?, ?> request = cells.take();
      if (!"execute".equals(request.get("t"))) continue;
      count++;
      Integer id = number(request.get("id"));
      send(Map.of("t", "start", "id", id, "count", count));
      Map<String, String> previous = applyProperties(request.get("env"));
      runningId = id;
      try {
        run(shell, request.get("code") instanceof String code ? code : "");
      } finally {
        runningId = null;
        System.out.flush();
        System.err.flush();
        restoreProperties(previous);
      }
      send(Map.of("t", "done", "id", id));
    }
  }

  static Integer number(Object value) {
    return value instanceof Number n ? n.intValue() : -1;
  }

  /** Runs the cell's snippets in order; stops at the first that fails. */
  static void run(JShell shell, String code) {
    SourceCodeAnalysis analysis = shell.sourceCodeAnalysis();
    List<String> snippets = new ArrayList<>();
    String rest = code;
    while (!rest.isBlank()) {
      SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(rest);
      if (!info.completeness().isComplete()) {
        // An incomplete tail (a missing semicolon after a last statement, an open brace) is given whole.
        snippets.add(rest);
        break;
      }
      snippets.add(info.source());
      rest = info.remaining();
    }
    for (int index = 0; index < snippets.size(); index++) {
      boolean last = index == snippets.size() - 1;
      for (SnippetEvent event : shell.eval(snippets.get(index))) {
        if (event.causeSnippet() != null) continue;
        Snippet snippet = event.snippet();
        if (event.status() == Snippet.Status.REJECTED) {
          String messages = shell.diagnostics(snippet)
              .map(diagnostic -> diagnostic.getMessage(null))
              .collect(Collectors.joining("\n"));
          send(error("CompilationException", messages, snippet.source()));
          return;
        }
        if (event.exception() != null) {
          Throwable thrown = event.exception();
          String name = thrown instanceof EvalException evaluated ? evaluated.getExceptionClassName() : thrown.getClass().getName();
          if (thrown instanceof jdk.jshell.UnresolvedReferenceException) name = "UnresolvedReferenceException";
          System.out.flush();
          System.err.flush();
          send(error(name, String.valueOf(thrown.getMessage()), stackOf(thrown)));
          return;
        }
        boolean expression = snippet.kind() == Snippet.Kind.EXPRESSION
            || snippet.subKind() == Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND;
        if (expression && event.value() != null) {
          String type = snippet instanceof VarSnippet variable ? variable.typeName() : "";
          Map<String, Object> data = Map.of("text/plain", shown(event.value(), type));
          System.out.flush();
          System.err.flush();
          send(Map.of("t", "result", "data", data, "main", last));
        }
      }
    }
  }

  /** JShell's text of a value; a String's without the quotes and escapes JShell adds. */
  static String shown(String value, String type) {
    if (!"String".equals(type) || value.length() < 2 || !value.startsWith("\"") || !value.endsWith("\"")) return value;
    StringBuilder text = new StringBuilder();
    for (int index = 1; index < value.length() - 1; index++) {
      char character = value.charAt(index);
      if (character != '\\' || index + 1 >= value.length() - 1) {
        text.append(character);
        continue;
      }
      char escaped = value.charAt(++index);
      switch (escaped) {
        case 'n' -> text.append('\n');
        case 't' -> text.append('\t');
        case 'r' -> text.append('\r');
        case 'b' -> text.append('\b');
        case 'f' -> text.append('\f');
        case '0' -> text.append('\0');
        default -> text.append(escaped);
      }
    }
    return text.toString();
  }

  static String stackOf(Throwable thrown) {
    StringBuilder text = new StringBuilder();
    String name = thrown instanceof EvalException evaluated ? evaluated.getExceptionClassName() : thrown.getClass().getName();
    text.append(name).append(": ").append(thrown.getMessage()).append('\n');
    for (StackTraceElement element : thrown.getStackTrace()) {
      if (element.getClassName().startsWith("jdk.jshell.") || element.getClassName().startsWith("java.lang.reflect.")
          || element.getClassName().startsWith("jdk.internal.")) break;
      text.append("\tat ").append(element).append('\n');
    }
    return text.toString();
  }

  static Map<String, Object> error(String name, String value, String traceback) {
    Map<String, Object> message = new LinkedHashMap<>();
    message.put("t", "error");
    message.put("name", name);
    message.put("value", value);
    message.put("traceback", traceback);
    return message;
  }

  /** An execution's environment variables as system properties; returns what puts the previous values back. */
  static Map<String, String> applyProperties(Object env) {
    Map<String, String> previous = new LinkedHashMap<>();
    if (!(env instanceof Map<?, ?> variables)) return previous;
    for (Map.Entry<?, ?> variable : variables.entrySet()) {
      if (!(variable.getKey() instanceof String name) || !(variable.getValue() instanceof String value) || name.isEmpty()) continue;
      previous.put(name, System.getProperty(name));
      System.setProperty(name, value);
    }
    return previous;
  }

  static void restoreProperties(Map<String, String> previous) {
    for (Map.Entry<String, String> entry : previous.entrySet()) {
      if (entry.getValue() == null) System.clearProperty(entry.getKey());
      else System.setProperty(entry.getKey(), entry.getValue());
    }
  }

  static void send(Map<String, ?> message) {
    String line = marker + Json.write(message) + "\n";
    synchronized (sending) {
      wire.print(line);
      wire.flush();
    }
  }

  /** System.out / System.err of the cells: UTF-8 bytes to framed messages at each flush and line end. */
  static final class CellOutput extends OutputStream {
    final String name;
    final ByteArrayOutputStream pending = new ByteArrayOutputStream();

    CellOutput(String name) {
      this.name = name;
    }

    @Override
    public synchronized void write(int value) {
      pending.write(value);
      if (value == '\n' || pending.size() >= MESSAGE_CHARS) flush();
    }

    @Override
    public synchronized void write(byte[] bytes, int offset, int length) {
      pending.write(bytes, offset, length);
      if (pending.size() >= MESSAGE_CHARS) flush();
    }

    @Override
    public synchronized void flush() {
      byte[] bytes = pending.toByteArray();
      // A UTF-8 character cut at the end waits for its other bytes.
      int end = bytes.length;
      int back = 0;
      while (back < 3 && end - back - 1 >= 0 && (bytes[end - back - 1] & 0xC0) == 0x80) back++;
      if (end - back - 1 >= 0) {
        int lead = bytes[end - back - 1] & 0xFF;
        int size = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (size > back + 1) end = end - back - 1;
      }
      pending.reset();
      pending.write(bytes, end, bytes.length - end);
      if (end == 0) return;
      String text = new String(bytes, 0, end, StandardCharsets.UTF_8);
      int start = 0;
      while (start < text.length()) {
        int stop = Math.min(text.length(), start + MESSAGE_CHARS);
        if (stop < text.length() && Character.isHighSurrogate(text.charAt(stop - 1))) stop--;
        send(Map.of("t", name, "text", text.substring(start, stop)));
        start = stop;
      }
    }
  }

  /** The JSON the protocol needs: objects, arrays, strings, numbers, booleans, null. */
  static final class Json {
    final String text;
    int at;

    Json(String text) {
      this.text = text;
    }

    static Object parse(String text) {
      if (text == null) throw new IllegalArgumentException("no input");
      Json parser = new Json(text);
      Object value = parser.value();
      parser.space();
      if (parser.at != text.length()) throw new IllegalArgumentException("trailing characters");
      return value;
    }

    void space() {
      while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
    }

    Object value() {
      space();
      if (at >= text.length()) throw new IllegalArgumentException("unexpected end");
      char next = text.charAt(at);
      if (next == '{') {
        Map<String, Object> object = new LinkedHashMap<>();
        at++;
        space();
        if (text.charAt(at) == '}') {
          at++;
          return object;
        }
        while (true) {
          space();
          String key = string();
          space();
          expect(':');
          object.put(key, value());
          space();
          if (text.charAt(at) == ',') {
            at++;
            continue;
          }
          expect('}');
          return object;
        }
      }
      if (next == '[') {
        List<Object> array = new ArrayList<>();
        at++;
        space();
        if (text.charAt(at) == ']') {
          at++;
          return array;
        }
        while (true) {
          array.add(value());
          space();
          if (text.charAt(at) == ',') {
            at++;
            continue;
          }
          expect(']');
          return array;
        }
      }
      if (next == '"') return string();
      if (text.startsWith("true", at)) {
        at += 4;
        return Boolean.TRUE;
      }
      if (text.startsWith("false", at)) {
        at += 5;
        return Boolean.FALSE;
      }
      if (text.startsWith("null", at)) {
        at += 4;
        return null;
      }
      int start = at;
      while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
      if (start == at) throw new IllegalArgumentException("unexpected character");
      return Double.parseDouble(text.substring(start, at));
    }

    void expect(char character) {
      if (at >= text.length() || text.charAt(at) != character) throw new IllegalArgumentException("expected " + character);
      at++;
    }

    String string() {
      expect('"');
      StringBuilder out = new StringBuilder();
      while (true) {
        if (at >= text.length()) throw new IllegalArgumentException("unterminated string");
        char character = text.charAt(at++);
        if (character == '"') return out.toString();
        if (character != '\\') {
          out.append(character);
          continue;
        }
        char escaped = text.charAt(at++);
        switch (escaped) {
          case 'n' -> out.append('\n');
          case 't' -> out.append('\t');
          case 'r' -> out.append('\r');
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'u' -> {
            out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            at += 4;
          }
          default -> out.append(escaped);
        }
      }
    }

    static String write(Object value) {
      StringBuilder out = new StringBuilder();
      write(value, out);
      return out.toString();
    }

    static void write(Object value, StringBuilder out) {
      if (value == null) out.append("null");
      else if (value instanceof String text) {
        out.append('"');
        for (int index = 0; index < text.length(); index++) {
          char character = text.charAt(index);
          switch (character) {
            case '"' -> out.append("\\\"");
            case '\\' -> out.append("\\\\");
            case '\n' -> out.append("\\n");
            case '\r' -> out.append("\\r");
            case '\t' -> out.append("\\t");
            default -> {
              if (character < 0x20 || character == 0x2028 || character == 0x2029) out.append(String.format("\\u%04x", (int) character));
              else out.append(character);
            }
          }
        }
        out.append('"');
      } else if (value instanceof Map<?, ?> map) {
        out.append('{');
        boolean first = true;
        for (Map.Entry<?, ?> entry : map.entrySet()) {
          if (!first) out.append(',');
          first = false;
          write(String.valueOf(entry.getKey()), out);
          out.append(':');
          write(entry.getValue(), out);
        }
        out.append('}');
      } else out.append(value);
    }
  }
}
