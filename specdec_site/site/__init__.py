"""The site's views of the artifacts: figures, values, the tables the hook renders, the files the site reads (files),
the site build (build) and the contract between the figure build and the hook (contract). Nothing here imports a
stage: what a view needs from one is in its artifact or in a shared module beside these rooms."""
