//! Reading numbers out of dfdu's JSON reports without a JSON crate (where the whole
//! document matters, the tests hand it to python3's `json` module instead).

/// The whole number after the first `"key":` in `json`; `None` when the key is missing or
/// no digits follow it.
pub fn json_num(json: &str, key: &str) -> Option<u64> {
    let needle = format!("\"{key}\":");
    let at = json.find(&needle)? + needle.len();
    json[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

/// `json_num`, failing the test when the number is not there.
pub fn json_field(json: &str, key: &str) -> u64 {
    json_num(json, key).unwrap_or_else(|| panic!("no number for {key} in {json}"))
}
