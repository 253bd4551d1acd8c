#!/usr/bin/env python3
# Checks that scripts/bootstrap.sh installs every Debian package the build used.
#
# bootstrap.sh installs APT_PACKAGES with --no-install-recommends, so a package
# the build needs is only there on a fresh machine if it is in that list or in
# the Depends/Pre-Depends closure of it. A package that merely happens to be
# installed here (pulled in by a Recommends, or by hand) passes the build on
# this machine and breaks it on the next one; this check catches that.
#
# "Used by the build" means the files of
#   - the headers the compiler read (ninja's dependency log, `ninja -t deps`),
#   - the shared libraries the built executables and shared objects resolve
#     (ldd on every ELF executable and shared object under the build tree),
#   - what CMake found (PATH/FILEPATH entries of CMakeCache.txt, the files in
#     the <Package>_DIR config directories, for a find_path() result the file
#     that made CMake pick the directory, the compilers named there; programs
#     found on the side that the build never needs are in OPTIONAL_PROBES),
# leaving out the source and build trees. Each file is mapped to the package
# that owns it through dpkg's database (/var/lib/dpkg/info/*.list); files no
# package owns (/usr/local/cuda, the project's .venv) are not this check's
# business and are only listed with -v.
#
# A package counts as installed by bootstrap.sh when it is in APT_PACKAGES or
# in the Depends/Pre-Depends closure of that list (read from
# /var/lib/dpkg/status; Recommends and Suggests do not count). The packages
# every Debian system has, Essential: yes and Priority: required (what a
# debootstrap minbase installs), and their Depends/Pre-Depends closure count as
# present too.
#
# Exit status: 0 all covered, 1 a package is not covered, 2 the check could
# not run. Python 3 standard library only.

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import stat
import subprocess
import sys
from collections import defaultdict, deque

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BOOTSTRAP = os.path.join(SOURCE_DIR, "scripts", "bootstrap.sh")
BOOTSTRAP_NAME = "scripts/bootstrap.sh"
DPKG_DIR = "/var/lib/dpkg"
ELF_EXECUTABLE, ELF_SHARED = 2, 3

# Programs CMake's find modules look for on the side, which nothing in the
# build needs: without them a fresh machine configures and builds the same.
OPTIONAL_PROBES = {
    "LIBXML2_XMLLINT_EXECUTABLE":
        "FindLibXml2 looks for xmllint; the build never runs it",
    "PKG_CONFIG_EXECUTABLE":
        "LLVM's find modules (FFI, LibEdit, LibXml2, CURL) take pkg-config's "
        "answers as search hints only; the default paths find the same files",
}


class CheckError(Exception):
    """The check could not run; main() reports it and exits 2."""


def run(command, what):
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        raise CheckError(f"cannot run {command[0]} ({what}): {error}")
    if result.returncode != 0:
        raise CheckError(f"{' '.join(command)} failed ({what}), exit status "
                         f"{result.returncode}:\n{result.stderr.strip()}")
    return result.stdout


def read_apt_packages():
    output = run(["bash", BOOTSTRAP, "--print-apt-packages"],
                 "reading APT_PACKAGES")
    packages = [line.strip() for line in output.splitlines() if line.strip()]
    if not packages:
        raise CheckError(f"{BOOTSTRAP_NAME} --print-apt-packages printed no "
                         "packages")
    return packages


class Dpkg:
    """The installed packages, their relations and their files."""

    def __init__(self, admin_dir):
        status_path = os.path.join(admin_dir, "status")
        if not os.path.isfile(status_path):
            raise CheckError(f"no dpkg database at {status_path}; this check "
                             "needs a Debian system")
        self.depends = defaultdict(list)  # package -> [[alternative, ...]]
        self.providers = defaultdict(set)  # virtual name -> packages
        self.base = {}  # package -> why every system has it
        self.installed = set()
        self._read_status(status_path)
        self.owners = defaultdict(set)  # path -> packages shipping it
        for list_path in glob.glob(os.path.join(admin_dir, "info", "*.list")):
            package = os.path.basename(list_path)[:-len(".list")]
            package = package.split(":")[0]
            with open(list_path, encoding="utf-8",
                      errors="surrogateescape") as listing:
                for line in listing:
                    self.owners[line.rstrip("\n")].add(package)
        if not self.owners:
            raise CheckError(f"no file lists in {admin_dir}/info")

    def _read_status(self, path):
        with open(path, encoding="utf-8", errors="replace") as status:
            for stanza in status.read().split("\n\n"):
                fields = {}
                key = None
                for line in stanza.splitlines():
                    if line[:1] in (" ", "\t"):
                        if key:
                            fields[key] += " " + line.strip()
                    elif ":" in line:
                        key, _, value = line.partition(":")
                        fields[key] = value.strip()
                name = fields.get("Package")
                if not name or not fields.get("Status", "").endswith(
                        " installed"):
                    continue
                self.installed.add(name)
                for field in ("Pre-Depends", "Depends"):
                    self.depends[name] += parse_relations(fields.get(field, ""))
                for group in parse_relations(fields.get("Provides", "")):
                    for virtual in group:
                        self.providers[virtual].add(name)
                if fields.get("Essential") == "yes":
                    self.base[name] = "Essential: yes"
                elif fields.get("Priority") == "required":
                    self.base[name] = "Priority: required"

    def resolve(self, name):
        """The installed packages that satisfy `name`, real or virtual."""
        found = set(self.providers.get(name, ()))
        if name in self.installed:
            found.add(name)
        return found

    def closure(self, roots):
        """Maps every package reachable from `roots` through Depends and
        Pre-Depends to the package that pulled it in (None for a root)."""
        parent = {}
        queue = deque()
        for root in roots:
            for package in sorted(self.resolve(root)):
                if package not in parent:
                    parent[package] = None
                    queue.append(package)
        while queue:
            package = queue.popleft()
            for group in self.depends.get(package, ()):
                for alternative in group:
                    for dependency in sorted(self.resolve(alternative)):
                        if dependency not in parent:
                            parent[dependency] = package
                            queue.append(dependency)
        return parent

    def packages_owning(self, path):
        """The packages the build needed for `path`, as one set of owners for
        the path as given and one for the file it resolves to (a -dev
        package's libfoo.so links to its runtime package's libfoo.so.1, and
        both are needed); each is looked up in its merged-/usr alias too.
        Packages that ship the same path are alternatives."""
        found = []
        for candidate in {os.path.normpath(path), os.path.realpath(path)}:
            for form in usr_aliases(candidate):
                if form in self.owners:
                    if self.owners[form] not in found:
                        found.append(self.owners[form])
                    break
        return found


def parse_relations(text):
    """'a (>= 1) | b:any, c' -> [['a', 'b'], ['c']]."""
    groups = []
    for group in text.split(","):
        names = []
        for alternative in group.split("|"):
            alternative = re.sub(r"\(.*?\)|\[.*?\]|<.*?>", "", alternative)
            name = alternative.strip().split(":")[0]
            if name:
                names.append(name)
        if names:
            groups.append(names)
    return groups


def usr_aliases(path):
    if path.startswith("/usr/"):
        return [path, path[len("/usr"):]]
    return [path, "/usr" + path]


class UsedFiles:
    """The files from outside the project the build used, each with what used
    it: {path: [(kind, detail), ...]}, kind being header, library or cmake."""

    def __init__(self, build_dir):
        self.build_dir = os.path.realpath(build_dir)
        self.source_dir = SOURCE_DIR
        self.venv_dir = os.path.join(SOURCE_DIR, ".venv")
        self.files = defaultdict(list)
        self.ignored = []  # (path, why) for OPTIONAL_PROBES
        self.project_files = set()  # seen and left out
        self.cache = read_cmake_cache(os.path.join(self.build_dir,
                                                   "CMakeCache.txt"))
        source = self.cache.get("CMAKE_HOME_DIRECTORY", ("", ""))[1]
        if source:
            self.source_dir = os.path.realpath(source)
            self.venv_dir = os.path.join(self.source_dir, ".venv")

    def is_external(self, path):
        real = os.path.realpath(path)
        for tree in (self.build_dir, self.source_dir):
            if real == tree or real.startswith(tree + os.sep):
                # The project's virtual environment is a dependency like any
                # other, even though it sits in the source tree.
                return tree == self.source_dir and real.startswith(
                    self.venv_dir + os.sep)
        return True

    def add(self, path, kind, detail):
        if not os.path.isabs(path):
            return
        path = os.path.normpath(path)
        # The dependency log names the same headers thousands of times.
        if path in self.project_files:
            return
        if path in self.files or self.is_external(path):
            self.files[path].append((kind, detail))
        else:
            self.project_files.add(path)

    def collect_headers(self):
        ninja = self.cache.get("CMAKE_MAKE_PROGRAM", ("", ""))[1]
        if not ninja or not os.path.isfile(ninja):
            ninja = shutil.which("ninja") or shutil.which("ninja-build")
        if not ninja:
            raise CheckError("ninja is not installed; it reads the build's "
                             "dependency log")
        if not os.path.isfile(os.path.join(self.build_dir, ".ninja_deps")):
            raise CheckError(f"no ninja dependency log in {self.build_dir} "
                             "(.ninja_deps); configure with -G Ninja and build "
                             "first")
        output = run([ninja, "-C", self.build_dir, "-t", "deps"],
                     "reading the dependency log")
        target = None
        for line in output.splitlines():
            if not line.startswith(" "):
                target = line.split(":")[0]
            elif line.strip():
                self.add(line.strip(), "header", f"compiling {target}")

    def collect_libraries(self):
        if not shutil.which("ldd"):
            raise CheckError("ldd is not installed (Debian package libc-bin); "
                             "it lists the libraries the binaries load")
        binaries = []
        for root, dirs, names in os.walk(self.build_dir):
            # CMakeFiles/ holds object files and CMake's compiler probes.
            dirs[:] = [d for d in dirs if d != "CMakeFiles"]
            for name in names:
                path = os.path.join(root, name)
                if not os.path.islink(path) and elf_type(path) in (
                        ELF_EXECUTABLE, ELF_SHARED):
                    binaries.append(path)
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
            for binary, output in zip(binaries, pool.map(ldd, binaries)):
                user = os.path.relpath(binary, self.build_dir)
                for match in re.finditer(r"^\s*(\S+)(?: => (\S+))? \(0x",
                                         output, re.MULTILINE):
                    library = match.group(2) or match.group(1)
                    self.add(library, "library", f"loaded by {user}")

    def find_module_dirs(self):
        cmake_root = self.cache.get("CMAKE_ROOT", ("", ""))[1]
        dirs = [os.path.join(cmake_root, "Modules")] if cmake_root else []
        dirs.append(os.path.join(self.source_dir, "cmake"))
        for key, (_, value) in self.cache.items():
            if key.endswith("_DIR") and os.path.isdir(value):
                dirs.append(value)
        return dirs

    def collect_cmake(self):
        find_path_names = read_find_path_names(self.find_module_dirs())
        for key, (kind, value) in sorted(self.cache.items()):
            compiler = re.fullmatch(r"CMAKE_\w+_COMPILER|CMAKE_COMMAND", key)
            if compiler and value and not os.path.isabs(value):
                value = shutil.which(value) or value
            if not (kind in ("PATH", "FILEPATH") or compiler or
                    (kind == "UNINITIALIZED" and os.path.isabs(value))):
                continue
            for path in value.split(";"):
                if not os.path.isabs(path) or not os.path.exists(path):
                    continue
                if os.path.isfile(path) and key in OPTIONAL_PROBES:
                    self.ignored.append((path, f"cmake {key}: "
                                         f"{OPTIONAL_PROBES[key]}"))
                elif os.path.isfile(path):
                    self.add(path, "cmake", key)
                elif key.endswith("_DIR") and is_config_dir(path):
                    for name in sorted(os.listdir(path)):
                        if os.path.isfile(os.path.join(path, name)):
                            self.add(os.path.join(path, name), "cmake", key)
                else:
                    # A find_path() result: the directory is often a shared
                    # root (/usr/include), the file that made CMake pick it
                    # (CL/cl.h) is what the build needed.
                    for name in find_path_names.get(key, ()):
                        if os.path.isfile(os.path.join(path, name)):
                            self.add(os.path.join(path, name), "cmake", key)


def read_cmake_cache(path):
    if not os.path.isfile(path):
        raise CheckError(f"no {path}; configure and build first (scripts/"
                         "build.sh), or name the build with --build-dir")
    entries = {}
    with open(path, encoding="utf-8", errors="replace") as cache:
        for line in cache:
            match = re.match(r"([^#/][^:=]*):(\w+)=(.*)$", line.rstrip("\n"))
            if match:
                entries[match.group(1)] = (match.group(2), match.group(3))
    return entries


FIND_PATH_KEYWORDS = {
    "HINTS", "PATHS", "PATH_SUFFIXES", "DOC", "ENV", "REQUIRED", "NO_CACHE",
    "NAMES_PER_DIR", "REGISTRY_VIEW", "VALIDATOR", "CMAKE_FIND_ROOT_PATH_BOTH",
    "ONLY_CMAKE_FIND_ROOT_PATH"}


def read_find_path_names(module_dirs):
    """{cache variable: [file names]} from the find_path() calls in the find
    modules and package configs of `module_dirs`: the files whose presence made
    CMake choose the directory it stored in the variable."""
    names = defaultdict(list)
    for directory in module_dirs:
        for module in glob.glob(os.path.join(directory, "*.cmake")):
            with open(module, encoding="utf-8", errors="replace") as text:
                calls = re.findall(r"\bfind_path\s*\(([^)]*)", text.read(),
                                   re.IGNORECASE)
            for call in calls:
                words = [w.strip('"') for w in call.split()]
                if len(words) < 2 or "$" in words[0]:
                    continue
                if words[1] == "NAMES":
                    listed = []
                    for word in words[2:]:
                        if word in FIND_PATH_KEYWORDS or word.startswith("NO_"):
                            break
                        listed.append(word)
                else:
                    listed = words[1:2]
                names[words[0]] += [n for n in listed if "$" not in n]
    return names


def is_config_dir(path):
    return any(re.search(r"(Config|-config)\.cmake$", name)
               for name in os.listdir(path))


def elf_type(path):
    # Only regular files: opening a FIFO (tests leave some in the build
    # tree) would wait for a writer forever.
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as binary:
            header = binary.read(18)
    except OSError:
        return None
    if len(header) < 18 or header[:4] != b"\x7fELF":
        return None
    return int.from_bytes(header[16:18],
                          "little" if header[5] == 1 else "big")


def ldd(path):
    result = subprocess.run(["ldd", path], capture_output=True, text=True)
    return result.stdout


def describe(uses):
    kind = uses[0][0]
    if kind == "cmake":
        entries = sorted({detail for k, detail in uses if k == "cmake"})
        return "cmake " + ", ".join(entries)
    return kind


def examples(paths, used):
    """Up to three of `paths`, a different kind first where there is one."""
    chosen = []
    for path in sorted(paths):
        kinds = {used[c][0][0] for c in chosen}
        if used[path][0][0] not in kinds:
            chosen.append(path)
    for path in sorted(paths):
        if path not in chosen:
            chosen.append(path)
    return ", ".join(f"{p} ({describe(used[p])})" for p in chosen[:3])


def chain(parent, package):
    names = [package]
    while parent.get(names[-1]):
        names.append(parent[names[-1]])
    return " <- ".join(names)


def main():
    parser = argparse.ArgumentParser(description=(
        "Checks that every Debian package the build used is installed by "
        f"{BOOTSTRAP_NAME}, directly or as a dependency."))
    parser.add_argument("--build-dir", default=os.path.join(SOURCE_DIR,
                                                            "build"),
                        help="the build tree (default: build)")
    parser.add_argument("--without", action="append", default=[],
                        metavar="PKG",
                        help="check as if PKG were not in APT_PACKAGES")
    parser.add_argument("--expect-missing", action="append", default=[],
                        metavar="PKG",
                        help="succeed only if the check fails and names PKG "
                        "(shows the check catches a missing package)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="list every package used and why it is covered")
    args = parser.parse_args()

    if not os.path.isdir(args.build_dir):
        raise CheckError(f"no build directory {args.build_dir}; build first "
                         "(scripts/build.sh) or name it with --build-dir")
    listed = read_apt_packages()
    for package in args.without:
        if package not in listed:
            raise CheckError(f"--without {package}: it is not in "
                             f"APT_PACKAGES in {BOOTSTRAP_NAME}")
    listed = [p for p in listed if p not in args.without]

    dpkg = Dpkg(DPKG_DIR)
    used = UsedFiles(args.build_dir)
    used.collect_cmake()
    used.collect_headers()
    used.collect_libraries()

    from_list = dpkg.closure(listed)
    from_base = dpkg.closure(dpkg.base)
    by_package = defaultdict(list)  # package -> paths it provided
    uncovered = defaultdict(list)
    foreign = []
    for path in sorted(used.files):
        owner_sets = dpkg.packages_owning(path)
        if not owner_sets:
            foreign.append(path)
        for owners in owner_sets:
            for package in owners:
                by_package[package].append(path)
            if not any(p in from_list or p in from_base for p in owners):
                uncovered[" or ".join(sorted(owners))].append(path)

    if args.verbose:
        print("check-deps: packages the build used, and why each is there:")
        for package in sorted(by_package):
            if package in from_list:
                why = ("in APT_PACKAGES" if from_list[package] is None else
                       "dependency: " + chain(from_list, package))
            elif package in from_base:
                why = (f"base system ({dpkg.base[package]})"
                       if from_base[package] is None else
                       "base system dependency: " + chain(from_base, package))
            else:
                why = "NOT INSTALLED BY BOOTSTRAP"
            print(f"  {package}: {why}; e.g. "
                  f"{examples(by_package[package][:1], used.files)}")
        by_dir = defaultdict(list)
        for path in foreign:
            by_dir[os.path.dirname(path)].append(path)
        print("check-deps: files not from a Debian package:")
        for directory in sorted(by_dir):
            paths = by_dir[directory]
            print(f"  {directory}/: {len(paths)} file(s), e.g. "
                  f"{examples(paths[:1], used.files)}")
        if used.ignored:
            print("check-deps: not checked, as optional probes:")
            for path, why in used.ignored:
                print(f"  {path} ({why})")
        for package in listed:
            if not dpkg.resolve(package):
                print(f"check-deps: note: {package} is in APT_PACKAGES but "
                      "not installed here")

    if uncovered:
        for package in sorted(uncovered):
            print(f"check-deps: {package} is not installed by "
                  f"{BOOTSTRAP_NAME}, but the build used "
                  f"{examples(uncovered[package], used.files)}")
        print(f"check-deps: add the package(s) above to APT_PACKAGES in "
              f"{BOOTSTRAP_NAME} (a Recommends or a hand install is not "
              "enough: bootstrap installs with --no-install-recommends)")
    else:
        print(f"check-deps: {len(by_package)} packages used by the build; all "
              f"installed by {BOOTSTRAP_NAME} (directly or as dependencies)")

    if args.expect_missing:
        missed = [p for p in args.expect_missing
                  if not any(p in key.split(" or ") for key in uncovered)]
        if missed:
            print(f"check-deps: expected the check to report "
                  f"{', '.join(missed)} as missing, and it did not")
            return 1
        print(f"check-deps: as expected, the check caught the missing "
              f"{', '.join(args.expect_missing)}")
        return 0
    return 1 if uncovered else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckError as error:
        print(f"check-deps: error: {error}", file=sys.stderr)
        sys.exit(2)
