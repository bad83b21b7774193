package models

import (
	"fmt"
	"slices"
	"sync"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/harness/history"
)

// A property is a plug-in: one value implementing checker holds everything the checker
// knows about it — its name and definition, its porcupine model (if it has one), its
// direct analysis of one key's sub-history, its streaming form for CheckFile, how its
// witness is cut, and the words of its verdicts. Check, CheckFile, the witnesses, the
// agreement tests, the verdict schema and docs/checker.md all iterate plugins, the one
// list. Adding a property is one file implementing checker and its entry in plugins.
type checker interface {
	// name is the property's name, as reports and flags spell it; doc defines it in a
	// sentence or two (docs/checker.md and the verdict schema quote it).
	name() Property
	doc() string
	// core says the property is checked on every history (Properties lists the core
	// ones). An optional one is checked only when applies says the history calls for it.
	core() bool
	applies(h *history.History) bool
	// optIn says an optional property is checked only when asked for (Options.Select),
	// and then only when applies: one whose verdict a whole class of runs gets by
	// design, which reports must not start giving unasked.
	optIn() bool

	// model is the property's porcupine model for fence rule fence and the interned
	// values vals (usesValues: nil when it does not use them); ok is false for a
	// property without one, which porcupine neither certifies nor second-guesses.
	model(fence string, vals *values) (m porcupine.Model, ok bool)
	usesValues() bool
	// modelOps chooses the ops of single-key history h the model is about; inModel says
	// whether op o is one of them (for the size estimate).
	modelOps(h *history.History, vals *values) []modelOp
	inModel(o *history.Op) bool
	// prepareCut, relevant and closure are the witness cutter's rules for the property
	// (witness.go): prepareCut sets up what the rules need, relevant says whether op i
	// may join a widened cut, closure adds what op i's meaning depends on.
	prepareCut(c *cutter)
	relevant(c *cutter, i int) bool
	closure(c *cutter, i int)

	// direct decides the property on single-key history h (its lost records are the
	// whole history's); it may fill the lists of d (stale writes, lost updates) that it
	// finds, and nothing else, since properties may run side by side.
	direct(h *history.History, d *DirectResult) Finding
	// streamKey is the property's state on key ks of a streamed history, or nil when it
	// has none there.
	streamKey(c *streamChecker, ks *keyState) keyStream

	// unproven says why a verdict that nothing contradicts proves nothing (or "");
	// held is the explanation of a held verdict; untested ends a "Not tested: …"
	// sentence.
	unproven(h *history.History, ops int, ev Evidence) (Reason, string)
	held(ev Evidence) string
	untested() string
}

// keyStream is a property's streaming form on one key: op sees each of the key's ops
// in call order (c.now is its call), finish the end of the history. It reports a
// violation with keyState.violate.
type keyStream interface {
	op(c *streamChecker, ks *keyState, s *sop) error
	finish(c *streamChecker, ks *keyState)
}

// wholeChecker is a property judged on the whole history after the direct analysis
// (effects), rather than per key: judge gives its result on history h and may add its
// evidence to rep; judgeStream does so for a streamed history. Its direct and
// streamKey are not called.
type wholeChecker interface {
	checker
	judge(h *history.History, d *DirectResult, rep *Report) Result
	judgeStream(c *streamChecker, h *history.History, d *DirectResult, rep *Report) Result
}

// plugins is the one list of properties, in report order.
var plugins = []checker{
	registerProp{},
	updatesProp{},
	tokensProp{},
	mutexProp{},
	effectsProp{},
	heedProp{},
}

// Properties lists the core properties, checked on every history, in report order.
// Treat it as read-only.
var Properties = func() []Property {
	var out []Property
	for _, p := range plugins {
		if p.core() {
			out = append(out, p.name())
		}
	}
	return out
}()

// AllProperties lists every property, the core ones and then the optional ones, in
// report order. A report has an optional one only when its history calls for it.
var AllProperties = func() []Property {
	out := make([]Property, len(plugins))
	for i, p := range plugins {
		out[i] = p.name()
	}
	return out
}()

// pluginOf is p's plug-in, or nil.
func pluginOf(p Property) checker {
	for _, c := range plugins {
		if c.name() == p {
			return c
		}
	}
	return nil
}

// mustPlugin is p's plug-in; it panics on an unknown property.
func mustPlugin(p Property) checker {
	c := pluginOf(p)
	if c == nil {
		panic(fmt.Sprintf("models: unknown property %q", p))
	}
	return c
}

// Valid reports whether p is one of Properties: a core property, which Model,
// Operations and Visualize take.
func (p Property) Valid() bool {
	c := pluginOf(p)
	return c != nil && c.core()
}

// OptIn reports whether p is checked only when asked for (Options.Select; --fail-on
// names it), not whenever the history calls for it.
func (p Property) OptIn() bool {
	c := pluginOf(p)
	return c != nil && c.optIn()
}

// Known reports whether p is one of AllProperties.
func (p Property) Known() bool { return pluginOf(p) != nil }

// Doc is p's definition, as docs/checker.md gives it; "" for an unknown property.
func (p Property) Doc() string {
	if c := pluginOf(p); c != nil {
		return c.doc()
	}
	return ""
}

// HasModel reports whether p has a porcupine model (which certifies its violations and
// gives a second opinion on it).
func (p Property) HasModel() bool { return withModel()[p] }

var withModel = sync.OnceValue(func() map[Property]bool {
	m := map[Property]bool{}
	for _, c := range plugins {
		_, m[c.name()] = c.model(history.FenceStrict, newValues(&history.History{}))
	}
	return m
})

// checked says whether h's report has property p when the properties sel are asked
// for: a core property always, an optional one when h calls for it, and an opt-in one
// only when asked for too.
func checked(p checker, h *history.History, sel []Property) bool {
	return p.core() || p.applies(h) && (!p.optIn() || slices.Contains(sel, p.name()))
}

// keyedPlugins are the plug-ins decided per key (every one but the whole-history
// ones) that h's report has when the properties sel are asked for.
func keyedPlugins(h *history.History, sel []Property) []checker {
	var out []checker
	for _, p := range plugins {
		if _, whole := p.(wholeChecker); !whole && checked(p, h, sel) {
			out = append(out, p)
		}
	}
	return out
}

// modelPlugins are the plug-ins with a porcupine model.
func modelPlugins() []checker {
	var out []checker
	for _, p := range plugins {
		if p.name().HasModel() {
			out = append(out, p)
		}
	}
	return out
}

// annotator is a property that draws its direct analysis's findings as extra rows of
// its porcupine visualization (visualize.go).
type annotator interface {
	annotations(h *history.History, d *DirectResult) []porcupine.Annotation
}

// capturer is a property whose streamed witness needs more than the key's recent ops
// and the ops its finding names (stream_witness.go): capture adds them to cp when the
// property is first found violated on key ks.
type capturer interface {
	capture(c *streamChecker, ks *keyState, cp *capture)
}

// noModel is embedded by a property without a porcupine model.
type noModel struct{}

func (noModel) model(string, *values) (porcupine.Model, bool) { return porcupine.Model{}, false }
func (noModel) usesValues() bool                              { return false }
func (noModel) modelOps(*history.History, *values) []modelOp  { return nil }
func (noModel) inModel(*history.Op) bool                      { return false }
func (noModel) prepareCut(*cutter)                            {}
func (noModel) relevant(*cutter, int) bool                    { return false }
func (noModel) closure(*cutter, int)                          {}

// always is embedded by a core property: it applies to every history.
type always struct{}

func (always) core() bool                    { return true }
func (always) optIn() bool                   { return false }
func (always) applies(*history.History) bool { return true }

// modelProperties are the names of modelPlugins.
func modelProperties() []Property {
	var out []Property
	for _, p := range modelPlugins() {
		out = append(out, p.name())
	}
	return out
}
