// A real tokenizer client for the tests: loads a Hugging Face tokenizer folder (tokenizer.json,
// and tokenizer_config.json when there) with the pinned @huggingface/tokenizers package, then
// answers a request, as JSON, with what that client does:
//
//   node tokenize.mjs PACKAGE FOLDER REQUEST OUTPUT
//
// PACKAGE  the package's dist/tokenizers.mjs (tests/data/fetch_tokenizer_client.sh fetches it)
// REQUEST  {"encode": [text, ...], "decode": [[id, ...], ...], "model": [pre-token, ...]}, each
//          key optional; "model" hands each pre-token (in the tokenizer's spelling) to the BPE
//          model alone, past the normalizer and pre-tokenizer, as a word inside a text reaches it
// OUTPUT   written as {"encode": [[id, ...], ...], "decode": [text, ...], "model": [[id, ...], ...]},
//          in the request's order
//
// Texts are encoded without special tokens (no BOS a post-processor would add) and ids decoded
// without cleaning up spaces or dropping special tokens, so that both show the model's own work.
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [packagePath, folder, requestPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node tokenize.mjs PACKAGE FOLDER REQUEST OUTPUT");
  process.exit(2);
}
const { Tokenizer } = await import(pathToFileURL(packagePath).href);
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
const configPath = join(folder, "tokenizer_config.json");
const tokenizer = new Tokenizer(readJson(join(folder, "tokenizer.json")), existsSync(configPath) ? readJson(configPath) : {});
const request = readJson(requestPath);
const answer = {
  encode: (request.encode ?? []).map((text) => tokenizer.encode(text, { add_special_tokens: false }).ids),
  decode: (request.decode ?? []).map((ids) =>
    ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
  ),
  model: (request.model ?? []).map((piece) =>
    tokenizer.model([piece]).map((token) => tokenizer.model.tokens_to_ids.get(token) ?? tokenizer.model.unk_token_id),
  ),
};
writeFileSync(outputPath, JSON.stringify(answer));
