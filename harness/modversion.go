package harness

import (
	"runtime/debug"
	"strings"
)

// ModuleVersion is module path's version as this binary was built with it, "path
// version" (e.g. "go.etcd.io/etcd/client/v3 v3.7.3"), read with runtime/debug's
// ReadBuildInfo; the path alone when the binary does not say (built without module
// information), "" for an empty path.
func ModuleVersion(path string) string {
	if path == "" {
		return ""
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return path
	}
	return moduleVersion(info, path)
}

func moduleVersion(info *debug.BuildInfo, path string) string {
	mods := append([]*debug.Module{&info.Main}, info.Deps...)
	for _, m := range mods {
		if m.Path != path {
			continue
		}
		if m.Replace != nil && m.Replace.Version != "" {
			m = m.Replace
		}
		if v := strings.TrimSpace(m.Version); v != "" && v != "(devel)" {
			return path + " " + v
		}
	}
	return path
}
