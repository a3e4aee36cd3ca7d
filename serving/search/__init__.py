"""One search, from the query to the ranked page: query analysis, the cached catalog, the legs'
statements and shapes, spelling, the query encoder, fusion, the result rows and the result cache."""
