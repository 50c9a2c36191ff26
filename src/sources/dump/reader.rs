//! Reading a dump's objects into a [`Dump`]: each by its kind and version, leniently (`lenient.rs`), each
//! charged to the dump's budget, and each one not read (or read without a field the scan reads) recorded.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::DynamicObject;
use serde::de::DeserializeOwned;

use super::budget::{Budget, OBJECT_BYTES};
use super::decode::decode;
use super::decode_error::DecodeError;
use super::lenient::decode_lenient;
use super::object_kind::{Kind, Unread};
use super::skipped::{Skipped, SkippedObject};
use super::tree::{Tree, Value, charge};
use super::versions;

/// The objects of a dump the scan reads; other kinds in a `List` are skipped.
#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// The nodes (a `List` item without `kind` is read as a Node, as older dumps write them).
    pub nodes: Vec<Node>,
    /// The pods.
    pub pods: Vec<Pod>,
    /// The ResourceSlices, read as `resource.k8s.io/v1`.
    pub(crate) slices: Vec<ResourceSlice>,
    /// The ResourceClaims, read as `resource.k8s.io/v1`.
    pub(crate) claims: Vec<ResourceClaim>,
    /// The DeviceClasses, read as `resource.k8s.io/v1`.
    pub(crate) classes: Vec<DeviceClass>,
    /// The DeviceTaintRules, of whichever `resource.k8s.io` version the dump holds (their `spec` as `v1`'s).
    pub(crate) taint_rules: Vec<DynamicObject>,
    /// Kueue's objects (`kueue.x-k8s.io`, any version: the fields read are alike): Topologies, and the quota
    /// objects (`sources::kueue`).
    pub(crate) kueue: Vec<DynamicObject>,
    /// The PodDisruptionBudgets (`policy/v1` only: v1beta1's empty selector selects no pod, v1's every
    /// pod), which `fit --plan` reads.
    pub(crate) budgets: Vec<PodDisruptionBudget>,
    /// One line per object skipped or field taken out, each starting with the source name: which object
    /// (list index, kind, name), why (the field that did not decode, or the apiVersion not read) and what to
    /// do.
    pub warnings: Vec<String>,
    /// The objects the scan could not read, or read without a field it reads: the scan is incomplete.
    pub skipped: Vec<SkippedObject>,
}

/// The dump being read, its warnings, and what reading it may still spend.
pub(super) struct Reader<'a> {
    source: &'a str,
    pub(super) dump: Dump,
    pub(super) budget: Budget,
    /// The list item being read, if any.
    item: Option<usize>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(source: &'a str, budget: Budget) -> Reader<'a> {
        Reader {
            source,
            dump: Dump::default(),
            budget,
            item: None,
        }
    }

    fn warn(&mut self, label: &str, message: &str) {
        self.dump
            .warnings
            .push(format!("{}: {label}: {message}", self.source));
    }

    /// Records an object not read (a warning naming `label`, and an entry of [`Dump::skipped`]).
    pub(super) fn skip(&mut self, kind: &str, name: &str, field: &str, label: &str, reason: &str) {
        // The warning names the field first, as a decoding error does.
        if field.is_empty() || field == "apiVersion" {
            self.warn(label, reason);
        } else {
            self.warn(label, &format!("{field}: {reason}"));
        }
        self.dump.skipped.push(SkippedObject {
            kind: kind.to_owned(),
            name: name.to_owned(),
            item: self.item,
            field: field.to_owned(),
            reason: reason.to_owned(),
            skipped: Skipped::Object,
        });
    }

    /// The items of a list, each read by its own `kind` (else `of`: a `NodeList`'s items may have none;
    /// a `List`'s items without one are Nodes, as older dumps write them) and its own `apiVersion` (else
    /// the typed list's). Items of other kinds are skipped without a word, as `kubectl get all` holds many.
    pub(super) fn read_list(&mut self, mut list: Tree, of: Option<Kind>) -> Result<(), String> {
        let list_version = of.and_then(|_| api_version(&list));
        let items = match list.remove("items") {
            None => return Ok(()),
            Some(items) if items.is_null() => return Ok(()),
            Some(Tree {
                value: Value::Seq(items),
                ..
            }) => items,
            Some(other) => {
                let error: DecodeError = serde::de::Error::custom("`items` is not a sequence");
                return Err(error.located(other.at).to_string());
            }
        };
        for (index, item) in items.into_iter().enumerate() {
            self.item = Some(index);
            let label = format!("items[{index}]");
            if !matches!(item.value, Value::Map(_)) {
                let reason = "not an object; skipped, the file's other objects are read";
                self.skip("", "<not an object>", "", &label, reason);
                continue;
            }
            let kind = match item.get("kind").and_then(Tree::as_str) {
                None => of.unwrap_or(Kind::Node),
                Some(kind) => match Kind::parse(kind) {
                    Some(kind) => kind,
                    None => continue,
                },
            };
            // Every object read costs its decoded form, however little text it takes.
            charge(&mut self.budget, OBJECT_BYTES, item.at)?;
            let version = api_version(&item).or_else(|| list_version.clone());
            let name = object_name(&item);
            let label = format!("{label} ({} {name})", kind.name());
            match self.read(item, kind, version.as_deref(), &label, &name) {
                Ok(()) => {}
                Err(Unread::Version(version)) => {
                    let reason = version_warning(kind, &version);
                    self.skip(kind.name(), &name, "apiVersion", &label, &reason);
                }
                Err(Unread::Decode(error)) => {
                    let reason = format!(
                        "{}; skipped, the file's other objects are read",
                        error.reason()
                    );
                    self.skip(kind.name(), &name, &error.field(), &label, &reason);
                }
            }
        }
        self.item = None;
        Ok(())
    }

    /// Reads one object of `kind` at `version` (its own, or its typed list's); `label` and `name` name it
    /// in what is said of the fields taken out of it.
    pub(super) fn read(
        &mut self,
        object: Tree,
        kind: Kind,
        version: Option<&str>,
        label: &str,
        name: &str,
    ) -> Result<(), Unread> {
        match kind {
            Kind::Node => {
                let node = self.lenient(object, kind, label, name)?;
                self.dump.nodes.push(node);
            }
            Kind::Pod => {
                let pod = self.lenient(object, kind, label, name)?;
                self.dump.pods.push(pod);
            }
            Kind::PodDisruptionBudget => {
                if version != Some(POLICY_V1) {
                    return Err(Unread::Version(version.unwrap_or_default().to_owned()));
                }
                let budget = self.lenient(object, kind, label, name)?;
                self.dump.budgets.push(budget);
            }
            Kind::DeviceTaintRule => self
                .dump
                .taint_rules
                .push(versions::taint_rule(&object, version)?),
            // Only Kueue's: another API group may name a kind `Topology` too, and is none of the scan's.
            Kind::Kueue(_) => {
                if version.is_some_and(|v| {
                    v.starts_with(&format!("{}/", crate::sources::kueue::KUEUE_GROUP))
                }) {
                    self.dump.kueue.push(decode(&object)?);
                }
            }
            Kind::ResourceSlice | Kind::ResourceClaim | Kind::DeviceClass => {
                let Some(object) = versions::as_v1(object, kind, version) else {
                    return Err(Unread::Version(version.unwrap_or_default().to_owned()));
                };
                match kind {
                    Kind::ResourceSlice => {
                        let slice = self.lenient(object, kind, label, name)?;
                        self.dump.slices.push(slice);
                    }
                    Kind::ResourceClaim => {
                        let claim = self.lenient(object, kind, label, name)?;
                        self.dump.claims.push(claim);
                    }
                    _ => {
                        let class = self.lenient(object, kind, label, name)?;
                        self.dump.classes.push(class);
                    }
                }
            }
        }
        Ok(())
    }

    /// Decodes `object` leniently: each field taken out is said, and recorded when the scan reads it.
    fn lenient<T: DeserializeOwned>(
        &mut self,
        object: Tree,
        kind: Kind,
        label: &str,
        name: &str,
    ) -> Result<T, Unread> {
        let (decoded, dropped) = decode_lenient::<T>(object, kind)?;
        for field in dropped {
            let (what, skipped) = if field.read_by_scan {
                ("the scan reads it: the object is read without it", true)
            } else {
                (
                    "the scan does not read it: the rest of the object is read",
                    false,
                )
            };
            self.warn(
                label,
                &format!("{}: {}; field ignored ({what})", field.field, field.reason),
            );
            if skipped {
                self.dump.skipped.push(SkippedObject {
                    kind: kind.name().to_owned(),
                    name: name.to_owned(),
                    item: self.item,
                    field: field.field,
                    reason: field.reason,
                    skipped: Skipped::Field,
                });
            }
        }
        Ok(decoded)
    }
}

pub(super) fn api_version(object: &Tree) -> Option<String> {
    object
        .get("apiVersion")
        .and_then(Tree::as_str)
        .map(str::to_owned)
}

/// `namespace/name`, `name`, or `<unnamed>`.
pub(super) fn object_name(object: &Tree) -> String {
    let metadata = object.get("metadata");
    let field = |key| metadata.and_then(|m| m.get(key)).and_then(Tree::as_str);
    match (field("namespace"), field("name")) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_owned(),
        (_, None) => "<unnamed>".to_owned(),
    }
}

/// The one version of PodDisruptionBudgets read.
const POLICY_V1: &str = "policy/v1";

/// What the scan reads of `kind`, and how to export it so that it does.
pub(super) fn version_warning(kind: Kind, version: &str) -> String {
    if kind == Kind::PodDisruptionBudget {
        return format!(
            "apiVersion {version:?} is not one this scan reads ({POLICY_V1}: an older version's empty \
             selector selects no pod, v1's every pod); skipped. Re-export it: kubectl get \
             poddisruptionbudgets.v1.policy -A -o yaml"
        );
    }
    let (versions, plural, older) = match kind {
        Kind::DeviceTaintRule => (
            versions::TAINT_RULE_VERSIONS,
            "devicetaintrules",
            "v1beta2 on Kubernetes 1.36, v1alpha3 before",
        ),
        Kind::ResourceClaim => (
            versions::DRA_VERSIONS,
            "resourceclaims",
            "v1beta1 before Kubernetes 1.34; add -A for every namespace",
        ),
        Kind::ResourceSlice => (
            versions::DRA_VERSIONS,
            "resourceslices",
            "v1beta1 before Kubernetes 1.34",
        ),
        _ => (
            versions::DRA_VERSIONS,
            "deviceclasses",
            "v1beta1 before Kubernetes 1.34",
        ),
    };
    format!(
        "apiVersion {version:?} is not one this scan reads ({versions}); skipped. Re-export it with a \
         served version: kubectl get {plural}.v1.resource.k8s.io -o yaml ({older})"
    )
}
