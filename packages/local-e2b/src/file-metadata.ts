// File metadata as envd keeps it: extended attributes `user.e2b.<key>` on the file itself, so it survives a
// rename and shows for metadata set from inside the sandbox (setfattr, os.setxattr). Node has no xattr API,
// so one small C helper per host process reads and writes them (compiled once like the launcher, see
// runtime/compile.ts); without a compiler metadata is answered back but not kept, as before.
//
// Entries are always named through the host's directory fd (`/proc/<host pid>/fd/<dirfd>/<name>`), with the
// l* calls that do not follow the last component: the same race-free walk as every other file operation.
import { type ChildProcess, spawn } from 'node:child_process'
import type { FileHandle } from 'node:fs/promises'
import { compiledHelper } from './runtime/compile.js'
import { SandboxFsError } from './sandbox-fs.js'

/** envd's xattr namespace for metadata. */
const PREFIX = 'user.e2b.'
/** envd's cap on all of a file's metadata (names with the prefix, plus values): one ext4 block. */
const MAX_TOTAL = 4096

/**
 * C source. One request per line on stdin, one answer line on stdout; every path, key and value in hex.
 *   `R <path>`: the `user.e2b.*` attributes, answered `M <key>=<value> ...` (prefix dropped).
 *   `W <path> <key>=<value> ...`: removes every `user.e2b.*` attribute, then sets these; answered `M`.
 * A failure is answered `E <errno>`.
 */
const XATTR_SOURCE = String.raw`#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/xattr.h>

#define PREFIX "user.e2b."

static int unhex(const char *text, size_t length, char *out) {
  for (size_t index = 0; index + 1 < length; index += 2) {
    unsigned int byte;
    if (sscanf(text + index, "%2x", &byte) != 1) return -1;
    out[index / 2] = (char)byte;
  }
  out[length / 2] = 0;
  return (int)(length / 2);
}

static void hex(const char *data, size_t length) {
  for (size_t index = 0; index < length; index++) printf("%02x", (unsigned char)data[index]);
}

/* The attribute names of path, or NULL with errno set. */
static char *names_of(const char *path, ssize_t *size) {
  ssize_t wanted = llistxattr(path, NULL, 0);
  if (wanted < 0) return NULL;
  char *names = malloc(wanted + 1);
  if (!names) return NULL;
  *size = wanted > 0 ? llistxattr(path, names, wanted) : 0;
  if (*size < 0) {
    free(names);
    return NULL;
  }
  return names;
}

static void answer_error(void) { printf("E %d\n", errno ? errno : EIO); }

static void read_metadata(const char *path) {
  ssize_t size;
  char *names = names_of(path, &size);
  if (!names) return answer_error();
  printf("M");
  for (char *name = names; name < names + size; name += strlen(name) + 1) {
    if (strncmp(name, PREFIX, strlen(PREFIX)) != 0) continue;
    char value[4096];
    ssize_t length = lgetxattr(path, name, value, sizeof value);
    if (length < 0) continue;
    printf(" ");
    hex(name + strlen(PREFIX), strlen(name) - strlen(PREFIX));
    printf("=");
    hex(value, length);
  }
  printf("\n");
  free(names);
}

static void write_metadata(const char *path, char *pairs) {
  ssize_t size;
  char *names = names_of(path, &size);
  if (!names) return answer_error();
  for (char *name = names; name < names + size; name += strlen(name) + 1) {
    if (strncmp(name, PREFIX, strlen(PREFIX)) == 0 && lremovexattr(path, name) < 0) {
      free(names);
      return answer_error();
    }
  }
  free(names);
  for (char *pair = strtok(pairs, " "); pair; pair = strtok(NULL, " ")) {
    char *equals = strchr(pair, '=');
    if (!equals) {
      errno = EINVAL;
      return answer_error();
    }
    char name[512], value[4096];
    size_t key_length = equals - pair, value_length = strlen(equals + 1);
    if (key_length / 2 + strlen(PREFIX) >= sizeof name || value_length / 2 >= sizeof value) {
      errno = E2BIG;
      return answer_error();
    }
    strcpy(name, PREFIX);
    unhex(pair, key_length, name + strlen(PREFIX));
    int length = unhex(equals + 1, value_length, value);
    if (lsetxattr(path, name, value, length, 0) < 0) return answer_error();
  }
  printf("M\n");
}

int main(void) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  char *line = NULL;
  size_t capacity = 0;
  ssize_t length;
  while ((length = getline(&line, &capacity, stdin)) > 0) {
    if (line[length - 1] == '\n') line[--length] = 0;
    errno = 0;
    if (length < 3 || line[1] != ' ') {
      errno = EINVAL;
      answer_error();
      fflush(stdout);
      continue;
    }
    char *path_hex = line + 2, *rest = strchr(path_hex, ' ');
    size_t path_length = rest ? (size_t)(rest - path_hex) : strlen(path_hex);
    char *path = malloc(path_length / 2 + 1);
    if (!path || unhex(path_hex, path_length, path) < 0) {
      errno = EINVAL;
      answer_error();
    } else if (line[0] == 'R') {
      read_metadata(path);
    } else if (line[0] == 'W') {
      write_metadata(path, rest ? rest + 1 : (char *)"");
    } else {
      errno = EINVAL;
      answer_error();
    }
    free(path);
    fflush(stdout);
  }
  return 0;
}
`

const ERRNO_CODES: Record<number, string> = {
  2: 'ENOENT',
  28: 'ENOSPC',
  61: 'ENODATA',
  95: 'ENOTSUP',
  122: 'EDQUOT',
}

/** The one helper process of this host process, and the answers it owes, in order. */
class XattrHelper {
  #child: ChildProcess | undefined
  #waiting: Array<(line: string) => void> = []
  #buffer = ''

  /** Sends one request line; resolves with its answer line, or undefined when there is no helper. */
  request(line: string): Promise<string | undefined> {
    const child = this.#start()
    if (!child?.stdin) return Promise.resolve(undefined)
    return new Promise((resolve) => {
      this.#waiting.push(resolve)
      child.stdin?.write(`${line}\n`)
    })
  }

  #start(): ChildProcess | undefined {
    if (this.#child && this.#child.exitCode === null && this.#child.signalCode === null) return this.#child
    const binary = compiledHelper('sandkeep-xattr', XATTR_SOURCE)
    if (!binary) return undefined
    const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'ignore'] })
    this.#child = child
    this.#buffer = ''
    child.stdout?.setEncoding('utf8')
    child.stdout?.on('data', (chunk: string) => {
      this.#buffer += chunk
      for (let newline = this.#buffer.indexOf('\n'); newline >= 0; newline = this.#buffer.indexOf('\n')) {
        const answer = this.#buffer.slice(0, newline)
        this.#buffer = this.#buffer.slice(newline + 1)
        this.#waiting.shift()?.(answer)
      }
    })
    const abandon = () => {
      if (this.#child === child) this.#child = undefined
      for (const resolve of this.#waiting.splice(0)) resolve('E 5')
    }
    child.on('exit', abandon)
    child.on('error', abandon)
    child.stdin?.on('error', abandon)
    // A helper waiting on stdin must not keep an otherwise finished process alive.
    child.unref()
    ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
    ;(child.stdout as unknown as { unref?: () => void } | null)?.unref?.()
    return child
  }
}

const helper = new XattrHelper()

const toHex = (text: string) => Buffer.from(text).toString('hex')
const entryPath = (dir: FileHandle, name: string) => toHex(`/proc/${process.pid}/fd/${dir.fd}/${name}`)

/** An answer's failure as the errno-style error the envd layer maps. */
function failure(answer: string): SandboxFsError {
  const errno = Number(answer.slice(2))
  const code = ERRNO_CODES[errno] ?? 'EIO'
  return new SandboxFsError(code, `file metadata: ${code}`)
}

/**
 * The metadata of `name` in `dir` (its `user.e2b.*` attributes), or undefined when it has none, the file
 * system keeps none, or there is no helper. Values that are not UTF-8 are skipped, as envd does.
 */
export async function readMetadata(
  dir: FileHandle,
  name: string,
): Promise<Record<string, string> | undefined> {
  const answer = await helper.request(`R ${entryPath(dir, name)}`)
  if (!answer?.startsWith('M')) return undefined
  const metadata: Record<string, string> = {}
  for (const pair of answer.slice(1).trim().split(' ').filter(Boolean)) {
    const [key, value] = pair.split('=').map((part) => Buffer.from(part, 'hex'))
    const decoder = new TextDecoder('utf-8', { fatal: true })
    try {
      metadata[decoder.decode(key)] = decoder.decode(value)
    } catch {}
  }
  return Object.keys(metadata).length > 0 ? metadata : undefined
}

/**
 * Replaces the metadata of `name` in `dir` (every `user.e2b.*` attribute goes, then these are set). A file
 * system without xattrs keeps none, as envd tolerates; other failures throw SandboxFsError (ENOSPC...).
 * False when nothing could be stored (no helper, no xattrs).
 */
export async function writeMetadata(
  dir: FileHandle,
  name: string,
  metadata: Record<string, string>,
): Promise<boolean> {
  const pairs = Object.entries(metadata).map(([key, value]) => `${toHex(key)}=${toHex(value)}`)
  const answer = await helper.request(`W ${entryPath(dir, name)}${pairs.length ? ` ${pairs.join(' ')}` : ''}`)
  if (answer === undefined) return false
  if (answer.startsWith('M')) return true
  if (answer === 'E 95') return false
  throw failure(answer)
}

/**
 * Why metadata would be refused (envd's rules: keys non-empty, keys and values printable ASCII, all of it
 * within one ext4 block), or undefined when it is fine.
 */
export function metadataProblem(metadata: Record<string, string>): string | undefined {
  let total = 0
  for (const [key, value] of Object.entries(metadata)) {
    if (key.length === 0) return 'metadata key must not be empty'
    if (PREFIX.length + key.length > 255) return `metadata key ${JSON.stringify(key)} is too long`
    if (!/^[\x20-\x7e]*$/.test(key) || !/^[\x20-\x7e]*$/.test(value))
      return `metadata ${JSON.stringify(key)} must be printable ASCII`
    total += PREFIX.length + key.length + value.length
  }
  return total > MAX_TOTAL ? `total metadata size ${total} exceeds ${MAX_TOTAL} bytes` : undefined
}
