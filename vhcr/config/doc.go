// Package config owns vhcrd's configuration file: the model HCA (firmware
// version, GUIDs, resource totals), its ports (LIDs, GIDs, P_Key tables, SM
// address, keys) and the per-VF view (visible ports, virtual P_Key index maps,
// GUIDs, link policy, resource quotas).
//
// The format is JSON, decoded strictly (unknown fields are errors). Every
// validation error names the field, e.g. `ports[0].lid: 65535 is not a
// unicast LID`. The embedded default (example.json, also the example file of
// the repository) is what `vhcrd serve` runs with when --config is not given.
package config
