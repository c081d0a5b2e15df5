# Runs on the task's image: the submission at /app (read-only), this directory at /tests,
# result.json into /logs/verifier. Submitted code runs only through $SPECGAP_CANDIDATE, in a
# sandbox of its own with a copy of the submission as its working directory.
got=$($SPECGAP_CANDIDATE python3 count.py sample.txt 2>/dev/null)
if [ "$got" = "9" ]; then sample=pass; else sample=fail; fi
echo "{\"version\": 1, \"tests\": {\"sample\": \"$sample\"}}" > /logs/verifier/result.json
