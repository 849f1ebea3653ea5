# sandkeep local-e2b: the R kernel of one code-interpreter context.
#
# One process per context, started by the host inside the sandbox (Debian's R, with jsonlite). It speaks the
# protocol of python-kernel.py (see its docstring): requests as JSON lines on fd 3 (the host's stdin, moved
# there through a pipe by the launching shell so that a child process cannot read them; fd 0 is /dev/null,
# fd 2 joins fd 1), messages as MARKER + JSON + "\n" on stdout. Cells share the global environment; each visible
# value of a top-level expression is shown as R prints it (the last one as the cell's main result), as IRkernel
# shows them; messages and warnings go to stderr; an error ends the cell with its message; SIGINT (the host's
# interrupt of an abandoned cell) ends the cell, not the kernel.

suppressPackageStartupMessages(library(jsonlite))

# The kernel's own state lives in this local environment: cells run in the global one, which stays theirs.
local({
  kernel <- environment()
  kernel$requests <- file("/dev/fd/3", open = "r", encoding = "UTF-8", raw = TRUE)
  kernel$hello <- fromJSON(readLines(kernel$requests, n = 1), simplifyVector = FALSE)
  kernel$marker <- paste0("\x1e", kernel$hello$nonce, ":")
  # Most characters of one stdout/stderr message, as the other kernels (the host parses each message whole).
  kernel$chunk <- 65536L

  kernel$send <- function(message) {
    cat(kernel$marker, toJSON(message, auto_unbox = TRUE, null = "null", digits = NA), "\n", sep = "")
    flush(stdout())
  }

  kernel$stream <- function(name, text) {
    if (!nzchar(text)) return(invisible())
    starts <- seq(1L, nchar(text), by = kernel$chunk)
    for (start in starts) kernel$send(list(t = name, text = substr(text, start, start + kernel$chunk - 1L)))
  }

  # Per-cell environment variables; returns what puts the previous values back.
  kernel$apply_env <- function(env) {
    previous <- list()
    for (name in names(env)) {
      value <- env[[name]]
      if (!is.character(value) || !nzchar(name) || grepl("=", name, fixed = TRUE)) next
      previous[[name]] <- Sys.getenv(name, unset = NA)
      do.call(Sys.setenv, stats::setNames(list(value), name))
    }
    previous
  }

  kernel$restore_env <- function(previous) {
    for (name in names(previous)) {
      value <- previous[[name]]
      if (is.na(value)) Sys.unsetenv(name) else do.call(Sys.setenv, stats::setNames(list(value), name))
    }
  }

  kernel$shown <- function(value) {
    paste(utils::capture.output(print(value)), collapse = "\n")
  }

  kernel$run <- function(code) {
    expressions <- tryCatch(parse(text = code, keep.source = FALSE), error = function(error) error)
    if (inherits(expressions, "error")) {
      kernel$send(list(t = "error", name = "SyntaxError", value = conditionMessage(expressions), traceback = ""))
      return(invisible())
    }
    tryCatch(
      withCallingHandlers(
        for (index in seq_along(expressions)) {
          outcome <- withVisible(eval(expressions[[index]], envir = globalenv()))
          if (outcome$visible) {
            data <- list("text/plain" = kernel$shown(outcome$value))
            kernel$send(list(t = "result", data = data, main = index == length(expressions)))
          }
        },
        message = function(condition) {
          flush(stdout())
          kernel$stream("stderr", conditionMessage(condition))
          invokeRestart("muffleMessage")
        },
        warning = function(condition) {
          flush(stdout())
          kernel$stream("stderr", paste0("Warning message:\n", conditionMessage(condition), "\n"))
          invokeRestart("muffleWarning")
        }
      ),
      error = function(condition) {
        # A stop() at the cell's own top level names the kernel's eval: say nothing of where, as R's console.
        call <- conditionCall(condition)
        top <- is.null(call) || identical(call[[1]], quote(eval))
        where <- if (top) "" else paste0("Error in ", paste(deparse(call), collapse = " "), "\n")
        flush(stdout())
        kernel$send(list(t = "error", name = "Error", value = conditionMessage(condition), traceback = where))
      },
      interrupt = function(condition) {
        flush(stdout())
        kernel$send(list(t = "error", name = "KeyboardInterrupt", value = "", traceback = ""))
      }
    )
    invisible()
  }

  kernel$send(list(t = "ready", pid = Sys.getpid(), version = 1L))
  kernel$count <- 0L
  repeat {
    # An interrupt that comes after its cell ended must not end the kernel.
    line <- tryCatch(readLines(kernel$requests, n = 1, warn = FALSE), interrupt = function(condition) NA)
    if (identical(line, NA)) next
    # The host closed the requests: the context is gone.
    if (length(line) == 0) quit(save = "no", status = 0)
    message <- tryCatch(fromJSON(line, simplifyVector = FALSE), error = function(error) NULL)
    if (is.null(message) || !identical(message$t, "execute")) next
    kernel$count <- kernel$count + 1L
    kernel$send(list(t = "start", id = message$id, count = kernel$count))
    previous <- kernel$apply_env(message$env)
    kernel$run(if (is.character(message$code)) message$code else "")
    kernel$restore_env(previous)
    flush(stdout())
    kernel$send(list(t = "done", id = message$id))
  }
})
