"""Checks the Java artifacts in dist/ against what Maven Central requires of a release.

Files: <a>-<v>.jar, <a>-<v>-sources.jar, <a>-<v>-javadoc.jar and <a>-<v>.pom, none empty, each
with a matching .md5 and .sha1. The POM: coordinates (no SNAPSHOT, nothing left unresolved),
name, description, url, licences, developers, scm, and every dependency with a version and a
scope. The sources jar has the .java of every public class of the jar, the javadoc jar an
index.html and a page for every public class of the packages it documents. GPG signatures (.asc)
are not checked: they are made when publishing (docs/packaging.md).
Prints every problem found and exits 1 if there is one.
Usage: check_central.py DIST GROUP ARTIFACT VERSION [--optional G:A]... [--release N]
"""

from __future__ import annotations

import argparse
import hashlib
import struct
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

POM_NS = "{http://maven.apache.org/POM/4.0.0}"
ACC_PUBLIC = 0x0001
# Constant pool entry sizes after the tag byte, by tag (JVMS 4.4); 1 (Utf8) is sized by its length.
CP_SIZES = {
    3: 4,
    4: 4,
    5: 8,
    6: 8,
    7: 2,
    8: 2,
    9: 4,
    10: 4,
    11: 4,
    12: 4,
    15: 3,
    16: 2,
    17: 4,
    18: 4,
    19: 2,
    20: 2,
}


def class_info(data: bytes) -> tuple[int, int]:
    """The major version and the access flags of a class file."""
    magic, _minor, major, count = struct.unpack_from(">IHHH", data, 0)
    if magic != 0xCAFEBABE:
        raise ValueError("not a class file")
    pos, index = 10, 1
    while index < count:
        tag = data[pos]
        if tag == 1:
            pos += 3 + struct.unpack_from(">H", data, pos + 1)[0]
        elif tag in CP_SIZES:
            pos += 1 + CP_SIZES[tag]
        else:
            raise ValueError(f"unknown constant pool tag {tag}")
        index += 2 if tag in (5, 6) else 1  # a long or a double takes two entries
    return major, struct.unpack_from(">H", data, pos)[0]


def text(elem: ET.Element, path: str) -> str:
    """The text of the first element at path (a/b/c, in the POM namespace), or ''."""
    found = elem.find("/".join(POM_NS + part for part in path.split("/")))
    return (found.text or "").strip() if found is not None else ""


def check_pom(
    pom: Path, group: str, artifact: str, version: str, optional: set[str], problems: list[str]
) -> None:
    raw = pom.read_text(encoding="utf-8")
    if "${" in raw:
        problems.append(f"{pom.name}: an unresolved ${{...}} is left in it")
    project = ET.fromstring(raw)
    if project.tag != POM_NS + "project":
        problems.append(f"{pom.name}: the root is {project.tag}, not a Maven 4.0.0 <project>")
        return
    for path, want in (
        ("modelVersion", "4.0.0"),
        ("groupId", group),
        ("artifactId", artifact),
        ("version", version),
    ):
        got = text(project, path)
        if got != want:
            problems.append(f"{pom.name}: <{path}> is '{got}', not '{want}'")
    if version.endswith("-SNAPSHOT"):
        problems.append(f"{pom.name}: version {version} is a SNAPSHOT (Central takes releases)")
    required = [
        "name",
        "description",
        "url",
        "licenses/license/name",
        "licenses/license/url",
        "developers/developer/name",
        "scm/url",
        "scm/connection",
        "scm/developerConnection",
    ]
    for path in required:
        if not text(project, path):
            problems.append(f"{pom.name}: <{path.replace('/', '><')}> is missing or empty")
    deps = project.findall(f"{POM_NS}dependencies/{POM_NS}dependency")
    seen = set()
    for dep in deps:
        name = f"{text(dep, 'groupId')}:{text(dep, 'artifactId')}"
        seen.add(name)
        for path in ("groupId", "artifactId", "version", "scope"):
            if not text(dep, path):
                problems.append(f"{pom.name}: dependency {name} has no <{path}>")
        if text(dep, "scope") in ("test", "system"):
            problems.append(
                f"{pom.name}: dependency {name} has scope {text(dep, 'scope')}"
                " (not for a published POM)"
            )
        if name in optional and text(dep, "optional") != "true":
            problems.append(f"{pom.name}: dependency {name} is not <optional>true</optional>")
    for name in sorted(optional - seen):
        problems.append(f"{pom.name}: no dependency {name}")


def public_classes(
    jar: zipfile.ZipFile, release: int | None, problems: list[str], jar_name: str
) -> set[str]:
    """The public classes of a jar, as paths without .class (nested ones as their outer)."""
    found, newer = set(), []
    for name in jar.namelist():
        if not name.endswith(".class") or name.startswith("META-INF/"):
            continue
        major, flags = class_info(jar.read(name))
        if release is not None and major > 44 + release:
            newer.append(f"{name} ({major})")
        if name == "module-info.class":
            found.add("module-info")
        elif flags & ACC_PUBLIC:
            found.add(name[: -len(".class")].split("$")[0])
    if newer and release is not None:
        problems.append(
            f"{jar_name}: {len(newer)} class files newer than Java {release}'s"
            f" version {44 + release}, e.g. {', '.join(sorted(newer)[:3])}"
        )
    return found


def check_files(files: list[Path], problems: list[str]) -> None:
    """Each file there, not empty, with a matching .md5 and .sha1."""
    for path in files:
        if not path.is_file() or path.stat().st_size == 0:
            problems.append(f"{path.name} is missing or empty")
            continue
        for algo in ("md5", "sha1"):
            digest = path.with_name(f"{path.name}.{algo}")
            want = hashlib.new(algo, path.read_bytes()).hexdigest()
            got = digest.read_text().split() if digest.is_file() else []
            if got[:1] != [want]:
                problems.append(f"{digest.name} is missing or does not match {path.name}")


def check_javadoc(path: Path, classes: set[str], problems: list[str]) -> int:
    """index.html, and a page for each public class of every documented package; their count."""
    with zipfile.ZipFile(path) as javadoc:
        pages = set(javadoc.namelist())
        elements = javadoc.read("element-list").decode().split() if "element-list" in pages else []
    if "index.html" not in pages:
        problems.append(f"{path.name} has no index.html")
    # element-list: "module:M" lines, each followed by the packages documented in M.
    module, packages = "", []
    for line in elements:
        if line.startswith("module:"):
            module = line.removeprefix("module:") + "/"
        else:
            packages.append((module, line.replace(".", "/") + "/"))
    if not packages:
        problems.append(f"{path.name} documents no package (element-list)")
    for module, prefix in packages:
        for cls in sorted(classes):
            in_package = cls.startswith(prefix) and "/" not in cls.removeprefix(prefix)
            if in_package and f"{module}{cls}.html" not in pages:
                problems.append(f"{path.name} has no page for public class {cls.replace('/', '.')}")
    return len(packages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", type=Path)
    parser.add_argument("group")
    parser.add_argument("artifact")
    parser.add_argument("version")
    parser.add_argument("--optional", action="append", default=[], help="G:A, must be optional")
    parser.add_argument("--release", type=int, help="no class file newer than this Java")
    args = parser.parse_args()
    base = args.dist / f"{args.artifact}-{args.version}"
    jar, sources, javadoc, pom = (
        Path(f"{base}{kind}") for kind in (".jar", "-sources.jar", "-javadoc.jar", ".pom")
    )
    problems: list[str] = []
    check_files([jar, sources, javadoc, pom], problems)
    if not problems:  # the rest reads the files
        check_pom(pom, args.group, args.artifact, args.version, set(args.optional), problems)
        with zipfile.ZipFile(jar) as opened:
            classes = public_classes(opened, args.release, problems, jar.name)
        if not classes:
            problems.append(f"{jar.name} has no public class")
        with zipfile.ZipFile(sources) as opened:
            names = set(opened.namelist())
        problems += [
            f"{sources.name} lacks {cls}.java"
            for cls in sorted(classes)
            if f"{cls}.java" not in names
        ]
        packages = check_javadoc(javadoc, classes, problems)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(
        f"{base.name}: jar, sources, javadoc, pom as Maven Central requires ({len(classes)}"
        f" public classes, {packages} documented packages, md5 and sha1 of each; not signed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
