#!/bin/sh
# Runs CuratorLock.java, the fencecheck exec client for Apache Curator's InterProcessMutex
# (Debian libcurator-recipes-java, openjdk-17-jdk-headless). It compiles the file once
# into a cache folder ($FENCECHECK_CACHE, else $XDG_CACHE_HOME/fencecheck, else
# ~/.cache/fencecheck; one folder per version of the source), so a client's JVM starts from
# classes: about 0.5 s of CPU to its first grant instead of about 2 s for `java
# CuratorLock.java`, which compiles it again in every process (backend/execlock/doc.md).
# A missing JDK or jar exits 127, which fencecheck reports as a command that cannot run.
# `curator_lock.sh --prepare` only compiles (if needed) and exits: the first run on a
# machine need not spend its clients' first answers on javac.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$here/CuratorLock.java
lib=/usr/share/java
cp=
for jar in curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple; do
	if [ ! -r "$lib/$jar.jar" ]; then
		case $jar in
		curator-*) pkg=libcurator-recipes-java ;;
		zookeeper*) pkg=libzookeeper-java ;;
		guava) pkg=libguava-java ;;
		*) pkg=libslf4j-java ;;
		esac
		echo "curator_lock.sh: $lib/$jar.jar is missing (apt-get install $pkg)" >&2
		exit 127
	fi
	cp=$cp${cp:+:}$lib/$jar.jar
done
for prog in java javac; do
	if ! command -v "$prog" >/dev/null 2>&1; then
		echo "curator_lock.sh: $prog is not installed (apt-get install openjdk-17-jdk-headless)" >&2
		exit 127
	fi
done
# The folder's name: the source, the jars and the JDK (not `javac -version`: a JVM start).
key=$( (cat "$src" && echo "$cp" && readlink -f "$(command -v javac)") | sha256sum | cut -c1-16)
root=${FENCECHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fencecheck}
if ! mkdir -p "$root" 2>/dev/null || [ ! -w "$root" ]; then
	root=$here # no cache to write: compile next to the source, once per run
fi
classes=$root/curator-lock-$key
if [ ! -f "$classes/CuratorLock.class" ]; then
	# The run's clients start together: one compiles, the others wait for it.
	(
		flock 9
		if [ ! -f "$classes/CuratorLock.class" ]; then
			tmp=$(mktemp -d "$root/.curator-lock.XXXXXX")
			if ! javac -d "$tmp" -cp "$cp" "$src" >&2; then
				rm -rf "$tmp"
				exit 1
			fi
			mv "$tmp" "$classes"
		fi
	) 9>"$root/.curator-lock.lock"
fi
if [ "${1:-}" = --prepare ]; then
	exit 0
fi
# SerialGC and the C1 compiler only: fewer threads and less CPU at start-up on a
# small machine; a lock client needs no peak throughput.
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
	-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true \
	-cp "$cp:$classes" CuratorLock
