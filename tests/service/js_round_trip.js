// What a JavaScript client does with an API's JSON: JSON.parse (numbers become doubles), then
// JSON.stringify to send it back. Reads JSON on stdin, writes the round-tripped JSON to stdout.
let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => { process.stdout.write(JSON.stringify(JSON.parse(input))); });
