"""sandkeep local-e2b: the Python kernel of one code-interpreter context.

One process per context, started by the host inside the sandbox. It keeps the context's globals between cells,
displays the value of a cell's trailing expression (repr, as a notebook shows it), streams what the cell prints
while it runs, and reports exceptions with their traceback.

Protocol (the host is packages/local-e2b/src/interpreter/kernel.ts):
- host -> kernel, on stdin: one JSON object per line. The first line is {"t": "hello", "nonce": "..."}; then
  {"t": "execute", "id": n, "code": "...", "env": {...}} and {"t": "interrupt", "id": n}. EOF means exit.
- kernel -> host, on stdout: every message is MARKER + JSON + "\n" where MARKER is "\x1e" + nonce + ":".
  JSON never contains a raw newline, so the host finds each message by its marker even when user code or a
  child process writes raw bytes to fd 1 (those bytes reach the host as plain stdout of the running cell).
  Messages: ready{pid, version}, start{id, count}, stdout{text}, stderr{text}, result{data, main},
  error{name, value, traceback}, done{id}.
The protocol stdin is moved off fd 0 (children get /dev/null) so a child process cannot swallow requests, and
fd 2 is pointed at fd 1 so raw stderr of children arrives in order with everything else.

With the argument --bash the same process is the kernel of a bash context instead (see bash_main).
"""

import ast
import builtins
import json
import os
import queue
import signal
import sys
import threading
import types

PROTOCOL_VERSION = 1
CELL_PREFIX = "<cell-"


def _setup_fds():
    # Keep the protocol input on a private, non-inheritable fd; fd 0 becomes /dev/null for user code.
    protocol_in = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # Raw stderr of child processes joins fd 1, so it reaches the host in order with the framed messages.
    os.dup2(1, 2)
    return os.fdopen(protocol_in, "rb", buffering=0)


protocol_in = _setup_fds()
_first = protocol_in.readline()
try:
    _hello = json.loads(_first)
    MARKER = ("\x1e" + str(_hello["nonce"]) + ":").encode()
except Exception:  # noqa: BLE001 - a host that does not speak the protocol gets a clear message and an exit
    os.write(1, b"sandkeep python kernel: expected a hello line on stdin\n")
    os._exit(2)

_send_lock = threading.Lock()
MAIN_THREAD = threading.get_ident()
# An interrupt is raised only while user code runs, and never in the middle of writing a message: a message cut
# in half would cost the host a resync. Outside those windows it waits in `pending` for the next safe point.
interrupt_state = {"user": False, "sending": 0, "pending": False}


def on_interrupt(signum, frame):
    if interrupt_state["user"] and not interrupt_state["sending"]:
        interrupt_state["pending"] = False
        raise KeyboardInterrupt
    interrupt_state["pending"] = True


def send(message):
    data = MARKER + json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
    on_main = threading.get_ident() == MAIN_THREAD
    if on_main:
        interrupt_state["sending"] += 1
    try:
        with _send_lock:
            view = memoryview(data)
            while view:
                written = os.write(1, view)
                view = view[written:]
    finally:
        if on_main:
            interrupt_state["sending"] -= 1
    if on_main and interrupt_state["pending"] and interrupt_state["user"] and not interrupt_state["sending"]:
        interrupt_state["pending"] = False
        raise KeyboardInterrupt


# Most characters one stdout/stderr message carries. The host parses each message whole: a 100 MB print sent as
# one message would hold its event loop for the whole parse, and nothing of it would show until the end. In
# pieces of this size it streams as it is produced, and the host's work per message stays bounded.
MESSAGE_CHARS = 64 * 1024


class CellStream:
    """sys.stdout / sys.stderr: line-buffered, framed, in messages of at most MESSAGE_CHARS characters. A partial
    line is flushed shortly after it is written, and at once when it reaches MESSAGE_CHARS."""

    def __init__(self, name, other=None):
        self.name = name
        self.other = other
        self._buffer = ""
        self._lock = threading.RLock()
        self._timer = None
        self.encoding = "utf-8"
        self.errors = "strict"

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not " + type(text).__name__)
        if not text:
            return 0
        with self._lock:
            # Keep stdout and stderr in the order they were written.
            if self.other is not None:
                self.other.flush()
            buffer = self._buffer + text if self._buffer else text
            # Complete lines go now; so does a partial line as far as it fills whole messages.
            end = buffer.rfind("\n") + 1
            if len(buffer) - end >= MESSAGE_CHARS:
                end = len(buffer) - (len(buffer) - end) % MESSAGE_CHARS
            for start in range(0, end, MESSAGE_CHARS):
                send({"t": self.name, "text": buffer[start : min(start + MESSAGE_CHARS, end)]})
            self._buffer = buffer[end:]
            if self._buffer and self._timer is None:
                self._timer = threading.Timer(0.05, self.flush)
                self._timer.daemon = True
                self._timer.start()
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._buffer:
                text, self._buffer = self._buffer, ""
                send({"t": self.name, "text": text})

    def fileno(self):
        return 1

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    @property
    def closed(self):
        return False


class NoInput:
    """sys.stdin: there is no interactive input in a code-interpreter cell."""

    encoding = "utf-8"
    closed = False

    def read(self, size=-1):
        return ""

    def readline(self, size=-1):
        return ""

    def readlines(self, hint=-1):
        return []

    def fileno(self):
        return 0

    def isatty(self):
        return False

    def readable(self):
        return True


stdout = CellStream("stdout")
stderr = CellStream("stderr", stdout)
stdout.other = stderr
sys.stdout = stdout
sys.stderr = stderr
sys.stdin = NoInput()
sys.path[0] = ""

# User code runs in a real module named __main__ (pickle, dataclasses and doctest look it up there).
main_module = types.ModuleType("__main__")
main_module.__dict__["__builtins__"] = builtins
sys.modules["__main__"] = main_module
namespace = main_module.__dict__


# The _repr_*_ methods a notebook asks an object for, with the MIME type each one answers.
REPR_METHODS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_pdf_", "application/pdf"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
    ("_repr_javascript_", "application/javascript"),
)
# Binary formats travel as base64 text, as Jupyter sends them; a str from their _repr_ is taken as base64 already.
BINARY_MIMES = ("image/png", "image/jpeg", "application/pdf")


def mime_value(mime, shown):
    """One format of a bundle as it goes on the wire, or None when it cannot be sent."""
    if isinstance(shown, tuple) and len(shown) == 2:
        shown = shown[0]  # IPython allows (data, metadata); the metadata is not part of E2B's result
    if shown is None:
        return None
    if mime in BINARY_MIMES:
        if isinstance(shown, (bytes, bytearray, memoryview)):
            import base64

            return base64.b64encode(bytes(shown)).decode("ascii")
        return shown if isinstance(shown, str) else None
    if mime == "application/json" or mime.endswith("+json"):
        if isinstance(shown, (str, bytes)):
            try:
                shown = json.loads(shown)
            except ValueError:
                return None
        try:
            json.dumps(shown)
        except (TypeError, ValueError):
            return None
        return shown
    if isinstance(shown, bytes):
        return shown.decode("utf-8", "replace")
    return shown if isinstance(shown, str) else None


def mime_bundle(value):
    """The formats a notebook shows for a value: text/plain, plus what its _repr_mimebundle_ / _repr_*_ offer."""
    data = {"text/plain": repr(value)}
    if isinstance(value, type):
        return data
    data.update(library_formats(value))
    bundle = getattr(value, "_repr_mimebundle_", None)
    if callable(bundle):
        try:
            offered = bundle()
        except Exception:  # noqa: BLE001 - a broken _repr_ must not hide the plain text
            offered = None
        if isinstance(offered, tuple) and len(offered) == 2:
            offered = offered[0]
        if isinstance(offered, dict):
            for mime, shown in offered.items():
                shown = mime_value(mime, shown) if isinstance(mime, str) else None
                if shown is not None:
                    data[mime] = shown
    for method, mime in REPR_METHODS:
        if mime in data:
            continue
        render = getattr(value, method, None)
        if not callable(render):
            continue
        try:
            shown = mime_value(mime, render())
        except Exception:  # noqa: BLE001 - a broken _repr_ must not hide the plain text
            continue
        if shown is not None:
            data[mime] = shown
    return data


def display(*values):
    """Notebook-style display(): shows each value as a secondary result of the cell."""
    for value in values:
        stdout.flush()
        stderr.flush()
        send({"t": "result", "data": mime_bundle(value), "main": False})


# ---- the data libraries of E2B's code-interpreter template ---------------------------------------------------
# matplotlib figures are shown as a png and as E2B's `chart` (kernels/python-charts.py), pandas DataFrames add
# E2B's `data` (the columns as lists), and PIL images are shown by Image.show() and by saving them to a file.
# Nothing is imported before the cell does: each library is adapted right after its first import.

figures_shown = set()
_charts = {}


def charts():
    """python-charts.py, loaded beside this file on first use."""
    if "module" not in _charts:
        import importlib.util

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python-charts.py")
        spec = importlib.util.spec_from_file_location("sandkeep_charts", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _charts["module"] = module
    return _charts["module"]


def json_safe(value):
    """A value JSON can carry as the kernel frames it: NaN and infinities become None, numpy scalars plain."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):
        return json_safe(value.item())
    return str(value)


def figure_formats(figure):
    import base64
    import io

    formats = {}
    buffer = io.BytesIO()
    # As a notebook's inline figures: cropped to what is drawn. Drawing also fills the tick labels the chart reads.
    figure.savefig(buffer, format="png", bbox_inches="tight")
    formats["image/png"] = base64.b64encode(buffer.getvalue()).decode("ascii")
    figures_shown.add(id(figure))
    try:
        chart = charts().figure_chart(figure)
    except Exception:  # noqa: BLE001 - a figure the extraction does not understand is still shown as a png
        chart = None
    if chart:
        formats["e2b/chart"] = json_safe(chart)
    return formats


def library_formats(value):
    """E2B's extra formats for the libraries' own objects (a figure, a DataFrame); {} for anything else."""
    figure_module = sys.modules.get("matplotlib.figure")
    if figure_module is not None and isinstance(value, figure_module.Figure):
        try:
            return figure_formats(value)
        except Exception:  # noqa: BLE001 - a figure that cannot be rendered is shown as its text
            return {}
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(value, pandas.DataFrame):
        try:
            return {"e2b/data": json_safe(value.to_dict(orient="list"))}
        except Exception:  # noqa: BLE001 - the html and text of the frame are still shown
            return {}
    return {}


def show_figures(*_args, **_kwargs):
    """pyplot.show(): shows every open figure (a png and its chart) and closes them, as a notebook does."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for number in pyplot.get_fignums():
        display(pyplot.figure(number))
    pyplot.close("all")


def show_figures_left_open():
    """After a cell: the figures it drew but did not show are shown, then closed (a notebook's inline figures)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        for number in pyplot.get_fignums():
            figure = pyplot.figure(number)
            if id(figure) not in figures_shown:
                display(figure)
        pyplot.close("all")
    figures_shown.clear()


def adapt_matplotlib(module):
    # No window system here: render with Agg, whatever the system's matplotlibrc names.
    module.rcParams["backend"] = "agg"


def adapt_pyplot(module):
    module.show = show_figures


def adapt_pil(module):
    original_save = module.Image.save

    def show(image, *_args, **_kwargs):
        display(image)

    def save(image, fp, *args, **kwargs):
        # Saving to a named file also shows the image, as E2B's template does.
        if isinstance(fp, (str, os.PathLike)):
            display(image)
        return original_save(image, fp, *args, **kwargs)

    module.Image.show = show
    module.Image.save = save


class AfterImport:
    """A sys.meta_path finder that runs a function right after a module's first import."""

    def __init__(self, hooks):
        self.hooks = hooks

    def find_spec(self, name, path=None, target=None):
        hook = self.hooks.pop(name, None)
        if hook is None:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            try:
                hook(module)
            except Exception:  # noqa: BLE001 - the library works unadapted rather than not at all
                pass

        loader.exec_module = exec_module
        return spec


def adapt_libraries():
    hooks = {"matplotlib": adapt_matplotlib, "matplotlib.pyplot": adapt_pyplot, "PIL.Image": adapt_pil}
    sys.meta_path.insert(0, AfterImport(hooks))


builtins.display = display


def shell(command):
    """`!command` in a cell: runs it with the shell and streams its merged output as stdout."""
    import subprocess

    stdout.flush()
    process = subprocess.Popen(
        command,
        shell=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    for line in iter(process.stdout.readline, b""):
        stdout.write(line.decode("utf-8", "replace"))
    process.wait()
    stdout.flush()


builtins.__sandkeep_shell__ = shell


def translate_magics(code):
    """The few IPython line magics agents use: `!cmd`, `%pip ...`, `%cd dir`. Other lines are left as they are."""
    if "!" not in code and "%" not in code:
        return code
    lines = code.split("\n")
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("!") and not stripped.startswith("!="):
            lines[index] = indent + "__sandkeep_shell__(" + repr(stripped[1:]) + ")"
        elif stripped.startswith("%pip ") or stripped.startswith("%pip\t"):
            lines[index] = indent + "__sandkeep_shell__(" + repr("pip " + stripped[5:]) + ")"
        elif stripped.startswith("%cd ") or stripped == "%cd":
            target = stripped[3:].strip() or "~"
            lines[index] = indent + "__import__('os').chdir(__import__('os').path.expanduser(" + repr(target) + "))"
    return "\n".join(lines)


_event_loop = None


def run_code(code_object):
    """Runs a compiled cell part; a part with top-level await is driven on the kernel's own event loop."""
    global _event_loop
    is_coroutine = code_object.co_flags & 0x80  # CO_COROUTINE: the part used top-level await
    if is_coroutine and _event_loop is None:
        import asyncio

        _event_loop = asyncio.new_event_loop()
        asyncio.set_event_loop(_event_loop)
    interrupt_state["user"] = True
    try:
        if interrupt_state["pending"]:
            interrupt_state["pending"] = False
            raise KeyboardInterrupt
        result = eval(code_object, namespace)
        if is_coroutine:
            result = _event_loop.run_until_complete(result)
        return result
    finally:
        interrupt_state["user"] = False


def user_traceback(error):
    """The traceback from the first frame of the cell on (the kernel's own frames are not the user's business)."""
    import traceback

    tb = error.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(CELL_PREFIX):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb))


def dedent_cell(code):
    """A cell whose first line is indented is taken as a whole indented block, as IPython takes it."""
    first = next((line for line in code.split("\n") if line.strip()), "")
    if first[:1] in (" ", "\t"):
        import textwrap

        return textwrap.dedent(code)
    return code


def execute(cell_id, count, code):
    import linecache

    filename = CELL_PREFIX + str(count) + ">"
    source = translate_magics(dedent_cell(code))
    # Registering the source lets tracebacks show the offending line, as a notebook does.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    try:
        tree = ast.parse(source, filename=filename, mode="exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = tree.body.pop()
        if tree.body:
            run_code(compile(tree, filename, "exec", flags=flags, dont_inherit=True))
        if last is not None:
            expression = ast.Expression(body=last.value)
            ast.copy_location(expression, last)
            value = run_code(compile(expression, filename, "eval", flags=flags, dont_inherit=True))
            if value is not None:
                namespace["_"] = value
                stdout.flush()
                stderr.flush()
                send({"t": "result", "data": mime_bundle(value), "main": True})
    except BaseException as error:  # noqa: BLE001 - every failure of a cell, KeyboardInterrupt and SystemExit included, is the cell's error
        stdout.flush()
        stderr.flush()
        if isinstance(error, SyntaxError) and error.filename == filename:
            import traceback

            text = "".join(traceback.format_exception_only(type(error), error))
        else:
            text = user_traceback(error)
        send({"t": "error", "name": type(error).__name__, "value": str(error), "traceback": text})
    finally:
        try:
            show_figures_left_open()
        except Exception:  # noqa: BLE001 - a figure that cannot be shown must not fail the kernel
            pass
        stdout.flush()
        stderr.flush()


requests = queue.Queue()
running = {"id": None}
running_lock = threading.Lock()


def interrupt_python_cell():
    # A real signal also wakes the main thread from blocking calls such as time.sleep.
    os.kill(os.getpid(), signal.SIGINT)


interrupt_running_cell = interrupt_python_cell


def read_requests():
    """Runs on a thread so an interrupt reaches the kernel while a cell keeps the main thread busy."""
    for line in protocol_in:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("t") == "interrupt":
            with running_lock:
                if running["id"] is not None and running["id"] == message.get("id"):
                    interrupt_running_cell()
        else:
            requests.put(message)
    # The host closed stdin: the context is gone.
    os._exit(0)


def apply_env(env):
    """Per-cell environment variables; returns what is needed to put the previous values back afterwards."""
    previous = {}
    if isinstance(env, dict):
        for key, value in env.items():
            if isinstance(key, str) and isinstance(value, str) and key and "=" not in key and "\0" not in key + value:
                previous[key] = os.environ.get(key)
                os.environ[key] = value
    return previous


def restore_env(previous):
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def serve(run):
    """Starts the request reader, says the kernel is ready, then runs each execute request in order:
    `run(cell_id, count, message)` runs one cell; its `done` message follows."""
    threading.Thread(target=read_requests, name="sandkeep-requests", daemon=True).start()
    send({"t": "ready", "pid": os.getpid(), "version": PROTOCOL_VERSION})
    count = 0
    while True:
        message = requests.get()
        if message.get("t") != "execute":
            continue
        count += 1
        cell_id = message.get("id")
        run(cell_id, count, message)
        send({"t": "done", "id": cell_id})


def main():
    signal.signal(signal.SIGINT, on_interrupt)
    adapt_libraries()
    serve(run_python_cell)


def run_python_cell(cell_id, count, message):
    previous = apply_env(message.get("env"))
    interrupt_state["pending"] = False
    with running_lock:
        running["id"] = cell_id
    send({"t": "start", "id": cell_id, "count": count})
    execute(cell_id, count, str(message.get("code", "")))
    with running_lock:
        running["id"] = None
    interrupt_state["pending"] = False
    restore_env(previous)


# ---- bash contexts -------------------------------------------------------------------------------------------
# One persistent bash per context. Cells reach it on a private pipe (NUL-terminated), never on its stdin,
# so a command that reads stdin cannot swallow the next cell. Each cell runs inside a function whose INT trap
# returns, so an interrupt stops the rest of the cell and keeps the shell; after it the loop prints a sentinel
# with the exit status on stdout and one on stderr, and the cell is over once both arrived. Variables, functions,
# `cd` and `export` persist across cells; `declare`/`typeset` without -g inside a cell stay local to that cell.
BASH_LOOP = r"""
exec 0</dev/null
__sandkeep_control=$__SANDKEEP_CONTROL_FD
__sandkeep_sentinel=$__SANDKEEP_SENTINEL
unset __SANDKEEP_CONTROL_FD __SANDKEEP_SENTINEL
trap ':' INT
__sandkeep_cell() {
  trap 'trap : INT; return 130' INT
  eval "$1"
}
while IFS= read -r -d '' -u "$__sandkeep_control" __sandkeep_source; do
  __sandkeep_cell "$__sandkeep_source"
  __sandkeep_status=$?
  trap ':' INT
  printf '\036%s:%s\n' "$__sandkeep_sentinel" "$__sandkeep_status"
  printf '\036%s:end\n' "$__sandkeep_sentinel" >&2
done
"""


def shell_quote(value):
    return "'" + value.replace("'", "'\\''") + "'"


class BashStream:
    """Reads one of bash's pipes: forwards output to the running cell and reports each sentinel."""

    def __init__(self, fd, name, sentinel, on_sentinel):
        import codecs

        self.fd = fd
        self.name = name
        self.marker = ("\x1e" + sentinel + ":").encode()
        self.on_sentinel = on_sentinel
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.forward = True

    def emit(self, data):
        text = self.decoder.decode(data)
        if text and self.forward:
            send({"t": self.name, "text": text})

    def run(self):
        pending = b""
        while True:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                break
            pending += chunk
            while True:
                start = pending.find(self.marker)
                if start < 0:
                    # Hold back a tail that could be the start of the marker.
                    keep = 0
                    for length in range(min(len(pending), len(self.marker) - 1), 0, -1):
                        if pending.endswith(self.marker[:length]):
                            keep = length
                            break
                    self.emit(pending[: len(pending) - keep])
                    pending = pending[len(pending) - keep :]
                    break
                end = pending.find(b"\n", start)
                if end < 0:
                    self.emit(pending[:start])
                    pending = pending[start:]
                    break
                self.emit(pending[:start])
                self.on_sentinel(pending[start + len(self.marker) : end].decode("ascii", "replace"))
                pending = pending[end + 1 :]
        self.emit(pending)
        # bash is gone (`exit` in a cell, killed): so is this context's kernel; the host cold-starts a new one.
        os._exit(1)


def bash_main():
    global interrupt_running_cell
    import secrets
    import subprocess

    sentinel = secrets.token_hex(8)
    control_read, control_write = os.pipe()
    base_env = dict(os.environ)
    shell = subprocess.Popen(
        ["/bin/bash", "--noprofile", "--norc", "-c", BASH_LOOP],
        pass_fds=(control_read,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=dict(base_env, __SANDKEEP_SENTINEL=sentinel, __SANDKEEP_CONTROL_FD=str(control_read)),
    )
    os.close(control_read)
    results = queue.Queue()
    out = BashStream(shell.stdout.fileno(), "stdout", sentinel, lambda status: results.put(("stdout", status)))
    err = BashStream(shell.stderr.fileno(), "stderr", sentinel, lambda status: results.put(("stderr", status)))
    for stream in (out, err):
        threading.Thread(target=stream.run, daemon=True).start()

    def interrupt_bash_cell():
        try:
            os.killpg(shell.pid, signal.SIGINT)
        except OSError:
            pass

    interrupt_running_cell = interrupt_bash_cell

    def run_cell(code, visible):
        out.forward = err.forward = visible
        os.write(control_write, code.encode("utf-8", "surrogateescape").replace(b"\0", b"") + b"\0")
        status = None
        pending = {"stdout", "stderr"}
        while pending:
            name, value = results.get()
            pending.discard(name)
            if name == "stdout":
                status = value
        out.forward = err.forward = True
        return status

    def run_bash_cell(cell_id, count, message):
        env = message.get("env") if isinstance(message.get("env"), dict) else {}
        names = [key for key, value in env.items() if isinstance(value, str) and key.isidentifier()]
        if names:
            run_cell("; ".join("export " + key + "=" + shell_quote(env[key]) for key in names), False)
        with running_lock:
            running["id"] = cell_id
        send({"t": "start", "id": cell_id, "count": count})
        status = run_cell(str(message.get("code", "")), True)
        with running_lock:
            running["id"] = None
        if status not in (None, "0"):
            # What Jupyter's bash kernel reports for a failing cell: no name, the exit status as the value.
            send({"t": "error", "name": "", "value": status, "traceback": ""})
        if names:
            restore = [
                ("export " + key + "=" + shell_quote(base_env[key])) if key in base_env else ("unset " + key)
                for key in names
            ]
            run_cell("; ".join(restore), False)

    serve(run_bash_cell)


if len(sys.argv) > 1 and sys.argv[1] == "--bash":
    bash_main()
else:
    main()
