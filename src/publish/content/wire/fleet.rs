//! A cluster's summary both ways: the `ClusterProperty`'s compact JSON value (at most
//! [`PROPERTY_VALUE_MAX`] characters, what a ClusterProfile property holds), and read back from a hub's
//! property with an error that says what is wrong with it.

use crate::crd::{GpuSummaryValue, PROPERTY_VALUE_MAX, ProductValue, SUMMARY_FORMAT};
use crate::inventory::model::{ClusterSummary, ProductSummary};

/// The summary as the property's value: compact JSON within [`PROPERTY_VALUE_MAX`] characters. Products are
/// left out from the smallest (`more` counts them) until it fits; the totals always stay.
pub fn summary_value(summary: &ClusterSummary) -> String {
    let mut value = GpuSummaryValue {
        v: SUMMARY_FORMAT,
        nodes: summary.nodes,
        gpus: summary.gpus,
        free: summary.free,
        unhealthy: summary.unhealthy,
        products: summary.products.iter().map(product_value).collect(),
        more: summary.omitted_products,
    };
    loop {
        let text = serde_json::to_string(&value).expect("the summary serializes");
        if text.chars().count() <= PROPERTY_VALUE_MAX || value.products.is_empty() {
            return text;
        }
        value.products.pop();
        value.more = value.more.saturating_add(1);
    }
}

fn product_value(product: &ProductSummary) -> ProductValue {
    ProductValue {
        vendor: product.vendor.clone(),
        product: product.product.clone(),
        nodes: product.nodes,
        gpus: product.gpus,
        free: product.free,
        unhealthy: product.unhealthy,
        gang: product.largest_free_gang,
    }
}

/// The summary a property's value carries, or why it cannot be read.
pub fn read_summary_value(text: &str) -> Result<ClusterSummary, String> {
    let value: GpuSummaryValue = serde_json::from_str(text).map_err(|e| {
        format!("the value is not the GPU summary's JSON ({e}); is another writer using this property's name?")
    })?;
    if value.v != SUMMARY_FORMAT {
        return Err(format!(
            "the summary's format is version {}; this version of the operator reads version {SUMMARY_FORMAT} \
             (upgrade it to read newer members)",
            value.v
        ));
    }
    Ok(ClusterSummary {
        nodes: value.nodes,
        gpus: value.gpus,
        free: value.free,
        unhealthy: value.unhealthy,
        products: value
            .products
            .into_iter()
            .map(|p| ProductSummary {
                vendor: p.vendor,
                product: p.product,
                nodes: p.nodes,
                gpus: p.gpus,
                free: p.free,
                unhealthy: p.unhealthy,
                largest_free_gang: p.gang,
            })
            .collect(),
        omitted_products: value.more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(n: usize, gpus: u64) -> ProductSummary {
        ProductSummary {
            vendor: Some("nvidia".to_owned()),
            product: format!("NVIDIA-Model-{n:02}-with-a-long-name-as-labels-allow-it"),
            nodes: 2,
            gpus,
            free: gpus / 2,
            unhealthy: 1,
            largest_free_gang: 4,
        }
    }

    #[test]
    fn a_summary_reads_back_as_written() {
        let summary = ClusterSummary {
            nodes: 3,
            gpus: 24,
            free: 12,
            unhealthy: 1,
            products: vec![product(1, 16), product(2, 8)],
            omitted_products: 0,
        };
        let text = summary_value(&summary);
        assert!(text.starts_with(r#"{"v":1,"nodes":3,"gpus":24,"free":12,"unhealthy":1,"products":[{"vendor":"nvidia","#), "{text}");
        assert_eq!(read_summary_value(&text), Ok(summary));
    }

    #[test]
    fn a_summary_of_many_products_keeps_the_largest_within_1024_characters_and_counts_the_rest() {
        let products: Vec<ProductSummary> = (0..40).map(|n| product(n, 400 - n as u64)).collect();
        let summary = ClusterSummary {
            nodes: 80,
            gpus: products.iter().map(|p| p.gpus).sum(),
            products,
            ..ClusterSummary::default()
        };
        let text = summary_value(&summary);
        assert!(text.chars().count() <= PROPERTY_VALUE_MAX, "{}", text.len());
        let read = read_summary_value(&text).unwrap();
        assert!(read.products.len() >= 5, "{}", read.products.len());
        assert_eq!(read.products.len() as u32 + read.omitted_products, 40);
        assert_eq!(read.products[0], summary.products[0], "the largest first");
        assert_eq!(read.gpus, summary.gpus, "the totals stay whole");
    }

    #[test]
    fn hostile_names_stay_json_and_within_the_bound() {
        let mut hostile = product(0, 8);
        hostile.product = "\u{1b}[31m\"}\n".repeat(60);
        let summary = ClusterSummary {
            products: vec![hostile.clone(), hostile],
            ..ClusterSummary::default()
        };
        let text = summary_value(&summary);
        assert!(text.chars().count() <= PROPERTY_VALUE_MAX);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\n'),
            "escaped: {text}"
        );
        assert!(read_summary_value(&text).is_ok());
    }

    #[test]
    fn a_value_that_is_not_ours_or_newer_says_so() {
        let not_json = read_summary_value("eu-west-1").unwrap_err();
        assert!(
            not_json.contains("not the GPU summary's JSON"),
            "{not_json}"
        );
        let newer =
            read_summary_value(r#"{"v":2,"nodes":1,"gpus":8,"free":8,"unhealthy":0,"racks":[]}"#)
                .unwrap_err();
        assert!(
            newer.contains("version 2") && newer.contains("reads version 1"),
            "{newer}"
        );
        // Fields a later version 1 adds are ignored.
        let extra = r#"{"v":1,"nodes":1,"gpus":8,"free":8,"unhealthy":0,"racks":[]}"#;
        assert_eq!(read_summary_value(extra).unwrap().gpus, 8);
    }
}
