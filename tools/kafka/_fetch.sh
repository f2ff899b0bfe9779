# Shared by start.sh and connector.sh (sourced, not run): fetch a set of Maven artifacts and
# what they need into a cache directory once, with Maven's own resolver.
#
#   fetch_maven_set NAME 'group:artifact:version ...'   -> prints the directory of the jars
#
# The cache lives under ${FLINK_AGENTS_CACHE:-~/.cache/flink-agents}/maven/NAME; a set is
# fetched again only when its artifact list changes (the list is kept beside the jars).

FLINK_AGENTS_CACHE="${FLINK_AGENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flink-agents}"

fetch_maven_set() {
    local name="$1" coords="$2" transitive="${3:-true}"
    local dir="$FLINK_AGENTS_CACHE/maven/$name"
    if [[ -f "$dir/coords" && "$(cat "$dir/coords")" == "$coords" && -d "$dir/lib" ]]; then
        echo "$dir/lib"
        return
    fi
    command -v mvn >/dev/null 2>&1 || {
        echo "kafka: Maven (mvn) is not installed and $dir is not cached; install Maven or Kafka" >&2
        return 1
    }
    local work
    work="$(mktemp -d "${TMPDIR:-/tmp}/flink-agents-mvn.XXXXXX")"
    {
        echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        echo "<groupId>local.flink-agents</groupId><artifactId>$name</artifactId><version>0</version>"
        echo '<packaging>pom</packaging><dependencies>'
        local c g a v
        for c in $coords; do
            IFS=: read -r g a v <<<"$c"
            echo "<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>"
        done
        echo '</dependencies></project>'
    } >"$work/pom.xml"
    echo "kafka: fetching $coords with Maven into $dir" >&2
    if ! mvn -q -B -Dstyle.color=never -f "$work/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$work/lib" -DincludeScope=runtime \
        -DexcludeTransitive="$([[ "$transitive" == true ]] && echo false || echo true)" >&2; then
        rm -rf "$work"
        echo "kafka: Maven could not fetch $coords" >&2
        return 1
    fi
    mkdir -p "$(dirname "$dir")"
    rm -rf "$dir"
    mkdir -p "$dir"
    mv "$work/lib" "$dir/lib"
    printf '%s' "$coords" >"$dir/coords"
    rm -rf "$work"
    echo "$dir/lib"
}
