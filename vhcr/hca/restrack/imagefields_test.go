package restrack

import (
	"reflect"
	"strings"
	"testing"
)

// imageFields says, for every field of the tracker's structs, where the
// image keeps it (the image struct and its field) or why it keeps it not.
// A field added to one of these structs and to neither fails
// TestImageCoversTheTracker: decide before it can slip out of the
// checkpoint. (The HCA's firmware state is a copy of value tables,
// vhcr/hca/state.go; the tracker's objects are linked, so its image is
// built by hand and this list keeps it complete.)
var imageFields = map[reflect.Type]map[string]string{
	reflect.TypeFor[Object](): {
		"Type": "ObjectImage.Type", "ID": "ObjectImage.ID", "Owner": "ObjectImage.Owner", "State": "ObjectImage.State",
		"Refs": "ObjectImage.Refs", "Order": "ObjectImage.Order", "Port": "ObjectImage.Port", "Index": "ObjectImage.Index",
		"Value": "ObjectImage.Value", "Special": "ObjectImage.Special", "from": "ObjectImage.From", "to": "ObjectImage.To",
		"deps": "ObjectImage.Deps", "ndeps": "ObjectImage.Deps",
		"prev": "not kept: list links, rebuilt from the order of Image.Objects", "next": "not kept: list links",
	},
	reflect.TypeFor[pool](): {
		"quota": "PoolImage.Quota", "guaranteed": "PoolImage.Guaranteed", "allocated": "PoolImage.Allocated",
		"free": "PoolImage.Free", "reserved": "PoolImage.Reserved",
	},
	reflect.TypeFor[bitmap](): {
		"w": "BitmapImage.Words", "hint": "BitmapImage.Hint",
		"lo": "not kept: the number space, from the configuration", "n": "not kept: the number space",
	},
	reflect.TypeFor[vfResources](): {
		"head":   "not kept: list heads, rebuilt from Image.Objects (each VF's lists in order)",
		"counts": "not kept: derived, the length of each list",
	},
	reflect.TypeFor[Tracker](): {
		"cfg":  "not kept: the configuration, the loading tracker's own",
		"objs": "not kept: the index by number, rebuilt from Image.Objects", "vfs": "Image.Objects",
		"pools": "Image.Pools", "nums": "Image.Nums",
		"mptMask": "not kept: from the configuration", "maxMTTOrder": "not kept: from the configuration",
	},
}

func TestImageCoversTheTracker(t *testing.T) {
	images := map[string]reflect.Type{"Image": reflect.TypeFor[Image](), "ObjectImage": reflect.TypeFor[ObjectImage](),
		"PoolImage": reflect.TypeFor[PoolImage](), "BitmapImage": reflect.TypeFor[BitmapImage]()}
	used := map[string]bool{}
	for ty, fields := range imageFields {
		for f := range ty.Fields() {
			where, ok := fields[f.Name]
			if !ok {
				t.Errorf("%v.%s: neither in the image nor on the list of fields it does not keep", ty, f.Name)
				continue
			}
			if strings.HasPrefix(where, "not kept:") {
				continue
			}
			im, field, _ := strings.Cut(where, ".")
			it, ok := images[im]
			if _, has := it.FieldByName(field); !ok || !has {
				t.Errorf("%v.%s: kept in %s, which does not exist", ty, f.Name, where)
			}
			used[where] = true
		}
		for name := range fields {
			if _, ok := ty.FieldByName(name); !ok {
				t.Errorf("the list of %v names %s, which it does not have", ty, name)
			}
		}
	}
	for name, it := range images {
		for f := range it.Fields() {
			if !used[name+"."+f.Name] {
				t.Errorf("%s.%s keeps no field of the tracker", name, f.Name)
			}
		}
	}
}
